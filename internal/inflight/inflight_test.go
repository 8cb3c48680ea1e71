package inflight_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/internal/inflight"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDoCallsEachOnceWithinTheLimit(t *testing.T) {
	for _, limit := range []int{1, 4, inflight.Limit} {
		for _, n := range []int{0, 1, 2, limit, 10 * limit} {
			calls := make([]int, n)
			var running, most atomic.Int64
			var mu sync.Mutex
			inflight.DoAtMost(n, limit, func(i int) {
				now := running.Add(1)
				mu.Lock()
				most.Store(max(most.Load(), now))
				mu.Unlock()
				calls[i]++
				running.Add(-1)
			})
			for i, c := range calls {
				if c != 1 {
					t.Fatalf("limit %d, n=%d: f(%d) called %d times", limit, n, i, c)
				}
			}
			if most.Load() > int64(limit) {
				t.Errorf("limit %d, n=%d: %d calls at once", limit, n, most.Load())
			}
		}
	}
}

func TestDoReachesTheLimit(t *testing.T) {
	// Every call blocks until Limit calls are running: Do must run that
	// many at once or never return.
	var arrived sync.WaitGroup
	arrived.Add(inflight.Limit)
	inflight.Do(inflight.Limit, func(int) {
		arrived.Done()
		arrived.Wait()
	})
}
