// Package inflight runs a batch of ZooKeeper requests concurrently with a
// bound on how many are in flight at once. The client pipelines requests
// on its one connection, so a batch of a thousand reads costs a few dozen
// round trips instead of a thousand, without a thousand goroutines.
package inflight

import "sync"

// Limit is the most calls Do runs at once.
const Limit = 32

// Do calls f(i) for every i in [0, n), at most Limit at a time, and
// returns when every call has returned. Each call should write only its
// own result slot, which the caller reads afterwards.
func Do(n int, f func(i int)) { DoAtMost(n, Limit, f) }

// DoAtMost is [Do] with at most limit calls at a time, for requests that
// each carry many operations.
func DoAtMost(n, limit int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	slots := make(chan struct{}, max(limit, 1)) // a semaphore: one slot per call in flight
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			f(i)
		}()
	}
	wg.Wait()
}
