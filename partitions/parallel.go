package partitions

import "sync"

// maxInFlight bounds the requests a set actor sends at once. The client
// pipelines them on its one connection, so reading a thousand topics
// costs a few dozen round trips instead of a thousand.
const maxInFlight = 32

// inParallel calls f(i) for every i in [0, n), at most maxInFlight at a
// time, and returns when all calls have returned. Each f writes only its
// own result slot; the caller reads them afterwards.
func inParallel(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	slots := make(chan struct{}, maxInFlight) // a semaphore: one slot per request in flight
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
