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
	for _, n := range []int{0, 1, 2, inflight.Limit, 10 * inflight.Limit} {
		calls := make([]int, n)
		var running, most atomic.Int64
		var mu sync.Mutex
		inflight.Do(n, func(i int) {
			now := running.Add(1)
			mu.Lock()
			most.Store(max(most.Load(), now))
			mu.Unlock()
			calls[i]++
			running.Add(-1)
		})
		for i, c := range calls {
			if c != 1 {
				t.Fatalf("n=%d: f(%d) called %d times", n, i, c)
			}
		}
		if most.Load() > inflight.Limit {
			t.Errorf("n=%d: %d calls at once; the limit is %d", n, most.Load(), inflight.Limit)
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
