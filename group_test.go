package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// The group: members join and converge, a duplicate name is refused,
// the shared set changes, Updates are sorted and closed, a ghost node
// under members/ is no member, and Stats with its events.

func TestFiveMembersConverge(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	want := append(actortest.PartsN("events", 30), actortest.PartsN("logs", 7)...)
	for i := range 5 {
		c.start(c.config(fmt.Sprintf("m%d", i), map[string][]int32{"events": ids(30), "logs": ids(7)}))
	}
	if gen := c.waitConverged(want); gen <= 0 {
		t.Errorf("generation = %d, want a zxid", gen)
	}
	for _, m := range c.members {
		if cur := m.alloc.Current(); cur.Generation <= 0 || len(cur.Members) != 5 {
			t.Errorf("%s: Current() = %+v, want a computed snapshot", m.name, cur)
		}
	}
}

// A second member under a live member's name waits for that member's
// session to end (it could be a crashed run's); when Start's context ends
// first, it fails with ErrDuplicateMember, and the first keeps everything.
func TestDuplicateMemberRefused(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	first := c.start(c.config("same", map[string][]int32{"t": ids(4)}))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.tryStartCtx(ctx, c.config("same", nil))
	if !errors.Is(err, zkalloc.ErrDuplicateMember) {
		t.Fatalf("Start of a second %q = %v, want ErrDuplicateMember", "same", err)
	}
	// The first keeps its name and its partitions.
	c.waitConverged(actortest.PartsN("t", 4))
	if u, _ := first.snapshot(); len(u.Assigned) != 4 {
		t.Errorf("first member has %v after the duplicate was refused, want all 4", u.Assigned)
	}
}

func TestAddAndRemovePartitions(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	a := c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	c.start(c.config("b", nil))
	c.start(c.config("c", map[string][]int32{"t": {2, 3, 4}}))
	want := actortest.PartsN("t", 5)
	c.waitConverged(want)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.alloc.AddPartitions(ctx, map[string][]int32{"u": {0, 1, 2}, "t": {10}}); err != nil {
		t.Fatalf("AddPartitions: %v", err)
	}
	want = append(want, zkalloc.Partition{Topic: "t", ID: 10})
	want = append(want, actortest.PartsN("u", 3)...)
	c.waitConverged(want)

	b := c.members["b"]
	if err := b.alloc.RemovePartitions(ctx, map[string][]int32{"t": {0, 10, 77}, "u": {0, 1, 2}}); err != nil {
		t.Fatalf("RemovePartitions: %v", err)
	}
	want = without(actortest.PartsN("t", 5), zkalloc.Partition{Topic: "t", ID: 0})
	c.waitConverged(want)

	if err := b.alloc.AddPartitions(ctx, map[string][]int32{"t": {-1}}); err == nil {
		t.Error("AddPartitions with a negative ID succeeded")
	}
}

func TestUpdatesSortedAndClosed(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	m := c.start(c.config("solo", map[string][]int32{"b": {10, 2, 1}, "a": {3}}))
	want := []zkalloc.Partition{{Topic: "a", ID: 3}, {Topic: "b", ID: 1}, {Topic: "b", ID: 2}, {Topic: "b", ID: 10}}
	c.waitConverged(want)
	u, _ := m.snapshot()
	if !slices.Equal(u.Assigned, want) {
		t.Errorf("Assigned = %v, want %v (topic, then numeric order)", u.Assigned, want)
	}
	c.stop(m)
	select {
	case <-m.done:
	case <-time.After(testTimeout):
		t.Fatal("Updates() not closed after Close")
	}
}

// TestGhostMemberGetsNothing puts a persistent node under members/, as an
// operator or another program might: it is no member. A one-member group
// owns every partition, and the ghost is logged once, with its path, as
// members come and go.
func TestGhostMemberGetsNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	members := "/zkalloc/groups/" + c.group + "/members"
	if err := zkpath.Ensure(obs, members); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(members+"/ghost", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	logs := actortest.NewLogs()
	cfg := c.config("a", map[string][]int32{"t": ids(4)})
	cfg.Logger = slog.New(logs)
	c.start(cfg)
	want := actortest.PartsN("t", 4)
	c.waitConverged(want)

	b := c.start(c.config("b", nil)) // the list changes twice more
	c.waitConverged(want)
	c.stop(b)
	c.waitConverged(want)

	ghosts := 0
	for range logs.Count() {
		r := logs.Next(t, testTimeout)
		if strings.Contains(r.Msg, "not a member") && r.Attrs["path"] == members+"/ghost" {
			ghosts++
		}
	}
	if ghosts != 1 {
		t.Errorf("the ghost was logged %d times; want once", ghosts)
	}
}

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
	if s := before.Stats(); s != (zkalloc.Stats{SessionState: zkalloc.StateIdle}) {
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
		if s.RecordWrites == 0 || s.RecordConflicts != 0 {
			return fmt.Sprintf("alone: %+v, want the sticky record written, with no conflict", s)
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
		if s.RevokedHandoff != moved || s.RevokedLost != 0 || s.RevokedShutdown != 0 {
			return fmt.Sprintf("after b joined: %+v, want %d revoked for a hand-off, none otherwise", s, moved)
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
	// The lease may run out before the reconnection on a loaded machine
	// (SessionsLost counts that too), but once at most: one reset.
	if s := a.alloc.Stats(); s.SessionID != sid || s.SessionsLost > 1 || s.RevokedLost == 0 {
		t.Errorf("after a reset: %+v, want session %#x resumed, at most one lease lost, and the partitions revoked as lost (no DisconnectGrace)", s, sid)
	}
	c.waitConverged(want)
	held := uint64(len(a.alloc.Current().Assigned))

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
		{zkalloc.EventSessionLost, final.SessionsLost},
		{zkalloc.EventRevokedHandoff, final.RevokedHandoff},
		{zkalloc.EventRevokedShutdown, final.RevokedShutdown},
		{zkalloc.EventRevokedLost, final.RevokedLost},
		{zkalloc.EventRecordWrite, final.RecordWrites},
		{zkalloc.EventRecordConflict, final.RecordConflicts},
	} {
		if got := sums.get(k.kind); got != k.n {
			t.Errorf("Metrics counted %d %v, Stats %d", got, k.kind, k.n)
		}
	}
	if final.Assigned != 0 || final.RevokedShutdown != held {
		t.Errorf("Stats after Close: %+v, want nothing assigned, and the %d partitions it held revoked for the shutdown", final, held)
	}
	if h := final.ComputeTimes; h.Count != final.Computes || h.Sum < final.LastCompute || h.Buckets[len(h.Buckets)-1] > h.Count {
		t.Errorf("ComputeTimes %+v, want one count for each of %d computes, summing at least the last (%v)", h, final.Computes, final.LastCompute)
	}
}

func TestEventKindString(t *testing.T) {
	t.Parallel()
	if got := zkalloc.EventHandoffStarted.String(); got != "handoff_started" {
		t.Errorf("EventHandoffStarted.String() = %q", got)
	}
	if got := zkalloc.EventRevokedLost.String(); got != "revoked_lost" {
		t.Errorf("EventRevokedLost.String() = %q", got)
	}
	if got := zkalloc.EventSessionLost.String(); got != "session_lost" {
		t.Errorf("EventSessionLost.String() = %q", got)
	}
	if got := zkalloc.EventRecordConflict.String(); got != "record_conflict" {
		t.Errorf("EventRecordConflict.String() = %q", got)
	}
	if got := zkalloc.EventKind(99).String(); got != "unknown" {
		t.Errorf("EventKind(99).String() = %q", got)
	}
}
