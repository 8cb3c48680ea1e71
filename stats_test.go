package zkalloc_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// eventSums adds up what Config.Metrics receives.
type eventSums struct {
	mu    sync.Mutex
	sums  map[zkalloc.EventKind]uint64
	calls int
	last  time.Duration // the latest EventCompute's Duration
}

func (e *eventSums) hook(ev zkalloc.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sums == nil {
		e.sums = map[zkalloc.EventKind]uint64{}
	}
	if ev.Count == 0 {
		panic(fmt.Sprintf("Event with no count: %+v", ev))
	}
	e.sums[ev.Kind] += ev.Count
	e.calls++
	if ev.Kind == zkalloc.EventCompute {
		e.last = ev.Duration
	}
}

func (e *eventSums) get(k zkalloc.EventKind) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sums[k]
}

// TestStats follows a member's Stats and Metrics through a join, a
// hand-off to a second member, a reconnection and Close.
func TestStats(t *testing.T) {
	t.Parallel()
	srv := server(t)
	proxy := zktest.StartProxy(t, srv.Addr())
	c := newCluster(t, []string{srv.Addr()})
	want := actortest.PartsN("t", 8)

	var sums eventSums
	cfg := c.config("a", map[string][]int32{"t": ids(8)})
	cfg.Servers = proxy.Addrs()
	cfg.Metrics = sums.hook
	before, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := before.Stats(); s != (zkalloc.Stats{SessionState: "connecting"}) {
		t.Errorf("Stats before Start = %+v", s)
	}
	before.Close()

	a := c.start(cfg)
	gen := c.waitConverged(want)
	waitFor(t, testTimeout, func() string {
		s := a.alloc.Stats()
		if s.SessionState != "up" || s.SessionID == 0 || s.Members != 1 || s.Assigned != 8 || s.Pending != 0 || s.Generation != gen || s.Computes == 0 {
			return fmt.Sprintf("alone: %+v, want up, 1 member, 8 assigned, generation %#x, a computation", s, gen)
		}
		if s.HandoffsStarted != 0 || s.Reconnects != 0 || s.StrategyErrors != 0 {
			return fmt.Sprintf("alone: %+v, want no hand-off, reconnection or error", s)
		}
		return ""
	})

	// b joins: a hands some partitions off, and counts them.
	c.start(c.config("b", nil))
	c.waitConverged(want)
	u, _ := a.snapshot()
	moved := uint64(8 - len(u.Assigned))
	waitFor(t, testTimeout, func() string {
		s := a.alloc.Stats()
		if s.Members != 2 || s.Assigned != len(u.Assigned) || s.HandoffsStarted != moved || s.HandoffsDone != moved || s.ReleaseTimeouts != 0 {
			return fmt.Sprintf("after b joined: %+v, want 2 members, %d assigned, %d hand-offs started and done", s, len(u.Assigned), moved)
		}
		if got := sums.get(zkalloc.EventHandoffDone); got != moved {
			return fmt.Sprintf("Metrics counted %d hand-offs done, want %d", got, moved)
		}
		return ""
	})
	if moved == 0 {
		t.Fatal("b took nothing from a")
	}

	// The connection drops and comes back: the session resumes.
	sid := a.alloc.Stats().SessionID
	proxy.Reset()
	waitFor(t, testTimeout, func() string {
		s := a.alloc.Stats()
		if s.Reconnects < 1 || s.SessionState != "up" {
			return fmt.Sprintf("after a reset: %+v, want up after a reconnection", s)
		}
		return ""
	})
	if s := a.alloc.Stats(); s.SessionID != sid {
		t.Errorf("session %#x after a reset, want %#x resumed", s.SessionID, sid)
	}

	// After Close, Metrics has been told every count.
	c.stop(a)
	final := a.alloc.Stats()
	for _, k := range []struct {
		kind zkalloc.EventKind
		n    uint64
	}{
		{zkalloc.EventReconnect, final.Reconnects},
		{zkalloc.EventCompute, final.Computes},
		{zkalloc.EventHandoffStarted, final.HandoffsStarted},
		{zkalloc.EventHandoffDone, final.HandoffsDone},
		{zkalloc.EventReleaseTimeout, final.ReleaseTimeouts},
		{zkalloc.EventStrategyError, final.StrategyErrors},
	} {
		if got := sums.get(k.kind); got != k.n {
			t.Errorf("Metrics counted %d %v, Stats %d", got, k.kind, k.n)
		}
	}
	if final.Assigned != 0 {
		t.Errorf("Stats after Close: %+v, want nothing assigned", final)
	}
}

func TestEventKindString(t *testing.T) {
	t.Parallel()
	if got := zkalloc.EventHandoffStarted.String(); got != "handoff_started" {
		t.Errorf("EventHandoffStarted.String() = %q", got)
	}
	if got := zkalloc.EventKind(99).String(); got != "unknown" {
		t.Errorf("EventKind(99).String() = %q", got)
	}
}
