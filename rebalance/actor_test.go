package rebalance_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// harness runs a rebalance actor fed by fake session, membership,
// partition and claims actors that send the same typed values the real
// ones do.
type harness struct {
	t       *testing.T
	clock   *actor.FakeClock
	session *actor.Latest[session.State]
	members chan membership.View
	parts   chan partitions.View
	desired *actor.Latest[claims.Desired]
	held    *actor.Latest[claims.Held]
	a       *rebalance.Actor
	ctx     context.Context
	last    rebalance.Update // the last update next received
	got     bool             // next has received one
}

type options struct {
	settle, releaseTimeout, grace time.Duration
	manualClaims                  bool // the test answers Desired itself
}

func newHarness(t *testing.T, member string, s rebalance.Strategy, opts options) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clock:   actor.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		session: actor.NewLatest[session.State](),
		members: make(chan membership.View),
		parts:   make(chan partitions.View),
		desired: actor.NewLatest[claims.Desired](),
		held:    actor.NewLatest[claims.Held](),
	}
	if opts.releaseTimeout == 0 {
		opts.releaseTimeout = time.Minute
	}
	h.a = rebalance.New(rebalance.Config{
		Member: member, Strategy: s, Settle: opts.settle, ReleaseTimeout: opts.releaseTimeout, Grace: opts.grace,
		Session: h.session, Members: h.members, Parts: h.parts, Desired: h.desired, Held: h.held, Clock: h.clock,
	})
	var deadlineCancel context.CancelFunc
	h.ctx, deadlineCancel = context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(deadlineCancel) // after the group has stopped (cleanups run last first)
	var g actor.Group
	g.Add("rebalance", h.a)
	if !opts.manualClaims {
		g.Add("claims", actor.Func(h.grantAll))
	}
	actortest.Run(t, "rebalance", g.Run)
	return h
}

// grantAll is a fake claims actor under which every wanted claim is free.
func (h *harness) grantAll(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.desired.Changed():
			if d, ok := h.desired.Take(); ok {
				h.held.Set(claims.Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Held: d.Want})
			}
		}
	}
}

// nextDesired waits for the rebalance actor's next Desired (manual claims).
func (h *harness) nextDesired() claims.Desired {
	h.t.Helper()
	for {
		select {
		case <-h.desired.Changed():
			if d, ok := h.desired.Take(); ok {
				return d
			}
		case <-h.ctx.Done():
			h.t.Fatal("no Desired")
		}
	}
}

func (h *harness) up(id int64, reconnects uint64) {
	h.session.Set(session.State{Status: session.Up, SessionID: id, Reconnects: reconnects})
}

func (h *harness) sendMembers(v membership.View) {
	h.t.Helper()
	select {
	case h.members <- v:
	case <-h.ctx.Done():
		h.t.Fatal("actor did not take the member view")
	}
}

func (h *harness) sendParts(v partitions.View) {
	h.t.Helper()
	select {
	case h.parts <- v:
	case <-h.ctx.Done():
		h.t.Fatal("actor did not take the partition view")
	}
}

// next receives the next update.
func (h *harness) next() rebalance.Update {
	h.t.Helper()
	select {
	case u, ok := <-h.a.Updates():
		if !ok {
			h.t.Fatal("Updates closed")
		}
		h.last, h.got = u, true
		return u
	case <-h.ctx.Done():
		h.t.Fatal("no update")
	}
	panic("unreachable")
}

// none checks that nothing has been published since the last update next
// received. The actor's loop is single-threaded, so a round trip through
// one of its unbuffered inputs (sync) proves it has finished handling
// everything sent before on those; it does not order the session, the
// claims held or acks, which the caller must see taken by other signs.
//
// It looks at Current, which the actor sets as it publishes, not only at
// Updates: when sync returns, the actor may not be back in its select to
// offer what it published, so a receive with a default would miss it.
func (h *harness) none(sync func()) {
	h.t.Helper()
	sync()
	if cur, ok := h.a.Current(); ok != h.got || ok && !reflect.DeepEqual(cur, h.last) {
		h.t.Fatalf("unexpected update %+v", cur)
	}
	select {
	case u := <-h.a.Updates():
		h.t.Fatalf("unexpected update %+v", u)
	default:
	}
}

func ps(topic string, ids ...int32) []partitions.Partition {
	out := make([]partitions.Partition, len(ids))
	for i, id := range ids {
		out[i] = partitions.Partition{Topic: topic, ID: id}
	}
	return out
}

func TestActorAssignsOnceViewsAreFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "b", rebalance.RoundRobin, options{})
	h.up(7, 1)
	// Views from another session must not be used.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 10, SessionID: 6, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2, 3), Zxid: 12, SessionID: 7, Reconnects: 1})
	h.none(func() {
		h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2, 3), Zxid: 12, SessionID: 7, Reconnects: 1})
	})

	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 10, SessionID: 7, Reconnects: 1})
	u := h.next()
	if u.Generation != 12 || !slices.Equal(u.Members, []string{"a", "b"}) {
		t.Errorf("update = %+v, want generation 12 and members [a b]", u)
	}
	if want := ps("t", 1, 3); !slices.Equal(u.Assigned, want) || !slices.Equal(u.Added, want) || len(u.Revoked) != 0 {
		t.Errorf("Assigned %v Added %v Revoked %v, want %v added", u.Assigned, u.Added, u.Revoked, want)
	}
	select {
	case <-h.a.Ready():
	default:
		t.Error("Ready not closed after the first assignment")
	}
	if cur, ok := h.a.Current(); !ok || cur.Generation != 12 {
		t.Errorf("Current() = %+v, %v", cur, ok)
	}
}

func TestActorWaitsUntilRegistered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "me", rebalance.RoundRobin, options{})
	h.up(1, 1)
	h.sendParts(partitions.View{Parts: ps("t", 0), Zxid: 3, SessionID: 1, Reconnects: 1})
	h.none(func() {
		h.sendMembers(membership.View{Members: []string{"other"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	})
	h.sendMembers(membership.View{Members: []string{"me", "other"}, Zxid: 5, SessionID: 1, Reconnects: 1})
	if u := h.next(); u.Generation != 5 {
		t.Errorf("generation = %d, want 5", u.Generation)
	}
}

func TestActorRevokesOnSuspendAndWaitsForFreshViews(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 2 {
		t.Fatalf("first update %+v", u)
	}

	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	u := h.next()
	if len(u.Assigned) != 0 || !slices.Equal(u.Revoked, ps("t", 0, 1)) || u.Reason == "" {
		t.Fatalf("on suspend got %+v, want everything revoked with a reason", u)
	}

	// Same session back: the old views are not enough.
	h.up(1, 2)
	h.none(func() { h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 2}) })
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 2})
	u = h.next()
	if !slices.Equal(u.Assigned, ps("t", 0, 1)) || !slices.Equal(u.Added, ps("t", 0, 1)) {
		t.Fatalf("after resuming got %+v, want both back", u)
	}
}

func TestActorConflatesWithoutLosingRevocations(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2, 3), Zxid: 3, SessionID: 1, Reconnects: 1})
	h.next()

	// Two changes the consumer does not read in between: the second must
	// still report what the first revoked.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	h.sendMembers(membership.View{Members: []string{"a", "b", "c"}, Zxid: 5, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2, 3), Zxid: 3, SessionID: 1, Reconnects: 1}) // sync
	u := h.next()
	if u.Generation != 5 {
		t.Fatalf("generation %d, want the newest, 5", u.Generation)
	}
	if want := ps("t", 0, 3); !slices.Equal(u.Assigned, want) {
		t.Errorf("Assigned %v, want %v", u.Assigned, want)
	}
	if want := ps("t", 1, 2); !slices.Equal(u.Revoked, want) || len(u.Added) != 0 {
		t.Errorf("Revoked %v Added %v, want %v revoked since the last update received", u.Revoked, u.Added, want)
	}
}

func TestActorSettles(t *testing.T) {
	t.Parallel()
	const settle = time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{settle: settle})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	view := partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 1}
	h.sendParts(view)
	h.none(func() { h.sendParts(view) }) // the same view again: the first is handled
	h.clock.Advance(settle)
	if u := h.next(); u.Generation != 3 {
		t.Fatalf("generation %d, want 3", u.Generation)
	}

}

// brokenStrategy is RoundRobin until mode is set, then fails that way.
type brokenStrategy struct{ mode *atomic.Value }

func (b brokenStrategy) Name() string { return "broken" }
func (b brokenStrategy) Assign(members []string, parts []partitions.Partition) (map[string][]partitions.Partition, error) {
	mode, _ := b.mode.Load().(string)
	switch mode {
	case "panic":
		panic("boom")
	case "error":
		return nil, errors.New("no")
	case "drop":
		return map[string][]partitions.Partition{members[0]: parts[1:]}, nil
	}
	return rebalance.RoundRobin.Assign(members, parts)
}

func TestActorKeepsAssignmentWhenStrategyFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"panic", "error", "drop"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			broken := brokenStrategy{mode: &atomic.Value{}}
			h := newHarness(t, "a", broken, options{})
			h.up(1, 1)
			h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
			h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2), Zxid: 3, SessionID: 1, Reconnects: 1})
			if u := h.next(); len(u.Assigned) != 3 {
				t.Fatalf("first update %+v", u)
			}

			broken.mode.Store(mode)
			h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2, 3), Zxid: 5, SessionID: 1, Reconnects: 1})
			u := h.next()
			if !slices.Equal(u.Assigned, ps("t", 0, 1, 2)) || len(u.Revoked) != 0 || len(u.Added) != 0 {
				t.Errorf("after a %s got %+v, want the previous assignment kept", mode, u)
			}
			if !strings.Contains(u.Reason, "strategy failed") {
				t.Errorf("Reason = %q, want the failure reported", u.Reason)
			}
		})
	}
}
