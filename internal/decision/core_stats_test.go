package decision

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestCoreCountsHandoffs(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	first := h.settled([]string{"a"}, 4)
	h.ack(first)
	if got := h.c.Counters(); got != (Counters{}) {
		t.Fatalf("counters before any hand-off: %+v", got)
	}
	h.members(view(1, 1, 4, "a", "b")) // t:1 and t:3 go to b
	u := h.next()
	if got := h.c.Counters(); got.HandoffsStarted != 2 || got.HandoffsDone != 0 {
		t.Fatalf("after revoking two: %+v, want 2 started, none done", got)
	}
	h.ack(u)
	d := h.nextDesired()
	h.grant(d, d.Partitions...) // the claims on t:1 and t:3 are given up
	if got := h.c.Counters(); got.HandoffsStarted != 2 || got.HandoffsDone != 2 || got.ReleaseTimeouts != 0 {
		t.Errorf("after the release: %+v, want 2 started, 2 done, no timeout", got)
	}
}

func TestCoreCountsReleaseTimeouts(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
	h.settled([]string{"a"}, 2)
	h.members(view(1, 1, 4, "a", "b"))
	h.next() // never acked
	h.advance(rt)
	d := h.nextDesired()
	if !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want after the timeout = %v", d.Partitions)
	}
	h.grant(d, d.Partitions...)
	if got := h.c.Counters(); got != (Counters{HandoffsStarted: 1, HandoffsDone: 1, ReleaseTimeouts: 1, RevokedHandoff: 1}) {
		t.Errorf("counters %+v, want one hand-off started and done, by a release timeout", got)
	}
}

func TestCoreCountsStrategyErrors(t *testing.T) {
	t.Parallel()
	broken := brokenStrategy{mode: new(string)}
	h := newCore(t, "a", broken, coreOptions{})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1, 2))
	h.next()
	*broken.mode = "error"
	h.parts(parts(1, 1, 5, 0, 1, 2, 3))
	h.next()
	if got := h.c.Counters().StrategyErrors; got != 1 {
		t.Errorf("StrategyErrors = %d after one failed run, want 1", got)
	}
}
