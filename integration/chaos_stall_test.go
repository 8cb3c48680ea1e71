package integration_test

import (
	"sync"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// stallingStrategy is one chaos member's strategy: the test's strategy,
// whose answers are sometimes late. While a stall is armed, every Assign
// blocks until the stall ends (or is released) before answering what the
// strategy answers, so the member's assignments are those of every other
// member, only late. Its Name is the strategy's own: members refuse to
// work with a member whose strategy is named differently. It is safe for
// concurrent use.
type stallingStrategy struct {
	rebalance.Strategy

	mu      sync.Mutex
	until   time.Time     // Assign calls before then stall until then
	release chan struct{} // closed to end the current stall at once
	stalled int           // Assign calls that stalled
}

var _ rebalance.Strategy = (*stallingStrategy)(nil)

func newStallingStrategy(s rebalance.Strategy) *stallingStrategy {
	return &stallingStrategy{Strategy: s, release: make(chan struct{})}
}

// Assign answers as the strategy does, after waiting for the end of the
// current stall, if any.
func (s *stallingStrategy) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	s.mu.Lock()
	wait, release := time.Until(s.until), s.release
	if wait > 0 {
		s.stalled++
	}
	s.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C: // the stall is the fault itself
		case <-release:
		}
		t.Stop()
	}
	return s.Strategy.Assign(members, parts)
}

// stall makes Assign calls stall until `until`.
func (s *stallingStrategy) stall(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = until
}

// end ends the current stall at once, and returns the time it was meant
// to end and how many Assign calls have stalled so far.
func (s *stallingStrategy) end() (until time.Time, stalled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	until = s.until
	s.until = time.Time{}
	close(s.release)
	s.release = make(chan struct{})
	return until, s.stalled
}
