package zkalloc

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// These tests check the shell's wiring: that it feeds the core and
// carries out what the core asks. The decisions themselves are tested on
// the core, synchronously (package decision's tests).
//
// harness runs a shell fed by fake session, membership, partition and
// claims actors that send the same typed values the real ones do.
type harness struct {
	t       *testing.T
	clock   *actor.FakeClock
	session *actor.Latest[session.State]
	members chan membership.View
	parts   chan partitions.View
	desired *actor.Latest[decision.Want]
	held    *actor.Latest[decision.Held]
	a       *shell
	ctx     context.Context
	last    Update // the last update next received
	got     bool   // next has received one
}

type options struct {
	settle, releaseTimeout, grace time.Duration
	manualClaims                  bool // the test answers Want itself
	assigner                      seam.Assigner
}

func newHarness(t *testing.T, name string, s rebalance.Strategy, opts options) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clock:   actor.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		session: actor.NewLatest[session.State](),
		members: make(chan membership.View),
		parts:   make(chan partitions.View),
		desired: actor.NewLatest[decision.Want](),
		held:    actor.NewLatest[decision.Held](),
	}
	if opts.releaseTimeout == 0 {
		opts.releaseTimeout = time.Minute
	}
	h.a = newShell(shellConfig{
		core:     decision.Config{Member: name, Settle: opts.settle, ReleaseTimeout: opts.releaseTimeout, DisconnectGrace: opts.grace},
		strategy: s,
		assigner: opts.assigner,
		session:  h.session, members: h.members, partitions: h.parts, want: h.desired, held: h.held, clock: h.clock,
		logger: slog.New(slog.DiscardHandler),
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
	// The session goes before the actor stops (cleanups run last first),
	// so that its drain ends at once instead of waiting for an ack.
	t.Cleanup(func() { h.session.Set(session.State{Status: session.Closed}) })
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
				h.held.Set(decision.Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Partitions: d.Partitions})
			}
		}
	}
}

// nextDesired waits for the rebalance actor's next Want (manual claims).
func (h *harness) nextDesired() decision.Want {
	h.t.Helper()
	for {
		select {
		case <-h.desired.Changed():
			if d, ok := h.desired.Take(); ok {
				return d
			}
		case <-h.ctx.Done():
			h.t.Fatal("no Want")
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
func (h *harness) next() Update {
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

// current waits until Current has reached generation gen and returns it.
func (h *harness) current(gen int64) Update {
	h.t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if u, ok := h.a.Current(); ok && u.Generation >= gen {
			return u
		}
		select {
		case <-tick.C:
		case <-h.ctx.Done():
			h.t.Fatalf("Current never reached generation %d", gen)
		}
	}
}

func TestShellAssignsOnceViewsAreFresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "b", rebalance.RoundRobin, options{})
	h.up(7, 1)
	// Views from another session must not be used.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 10, SessionID: 6, Reconnects: 1})
	h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3), Zxid: 12, SessionID: 7, Reconnects: 1})
	h.none(func() {
		h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3), Zxid: 12, SessionID: 7, Reconnects: 1})
	})

	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 10, SessionID: 7, Reconnects: 1})
	u := h.next()
	if u.Generation != 12 || !slices.Equal(u.Members, []string{"a", "b"}) {
		t.Errorf("update = %+v, want generation 12 and members [a b]", u)
	}
	if want := actortest.Parts("t", 1, 3); !slices.Equal(u.Assigned, want) || !slices.Equal(u.Added, want) || len(u.Revoked) != 0 {
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

func TestShellSettles(t *testing.T) {
	t.Parallel()
	const settle = time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{settle: settle})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	view := partitions.View{Partitions: actortest.Parts("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 1}
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
func (b brokenStrategy) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	mode, _ := b.mode.Load().(string)
	switch mode {
	case "panic":
		panic("boom")
	case "error":
		return nil, errors.New("no")
	case "drop":
		return map[string][]rebalance.Partition{members[0]: parts[1:]}, nil
	}
	return rebalance.RoundRobin.Assign(members, parts)
}

func TestShellKeepsAssignmentWhenStrategyFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"panic", "error", "drop"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			broken := brokenStrategy{mode: &atomic.Value{}}
			h := newHarness(t, "a", broken, options{})
			h.up(1, 1)
			h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
			h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2), Zxid: 3, SessionID: 1, Reconnects: 1})
			if u := h.next(); len(u.Assigned) != 3 {
				t.Fatalf("first update %+v", u)
			}

			broken.mode.Store(mode)
			h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3), Zxid: 5, SessionID: 1, Reconnects: 1})
			u := h.next()
			if !slices.Equal(u.Assigned, actortest.Parts("t", 0, 1, 2)) || len(u.Revoked) != 0 || len(u.Added) != 0 {
				t.Errorf("after a %s got %+v, want the previous assignment kept", mode, u)
			}
			if !strings.Contains(u.Reason, "strategy failed") {
				t.Errorf("Reason = %q, want the failure reported", u.Reason)
			}
		})
	}
}

// settled brings a manual-claims harness to a first assignment of
// members over t:0..n-1 with every wanted claim granted, and returns it.
func settled(t *testing.T, h *harness, members []string, n int32) Update {
	t.Helper()
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	h.up(1, 1)
	h.sendMembers(membership.View{Members: members, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Partitions: actortest.Parts("t", ids...), Zxid: 3, SessionID: 1, Reconnects: 1})
	d := h.nextDesired()
	h.grant(d, d.Partitions...)
	return h.next()
}

// grant answers d with the given claims held.
func (h *harness) grant(d decision.Want, held ...rebalance.Partition) {
	h.held.Set(decision.Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Partitions: held})
}

func TestShellKeepsRevokedClaimUntilAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	first := settled(t, h, []string{"a"}, 4)
	first.Ack()

	// b joins: a keeps t:0 and t:2, revokes t:1 and t:3.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	u := h.next()
	if !slices.Equal(u.Revoked, actortest.Parts("t", 1, 3)) || !slices.Equal(u.Assigned, actortest.Parts("t", 0, 2)) {
		t.Fatalf("after b joined: %+v", u)
	}
	// The revoked claims are kept: nothing new is desired.
	h.none(func() {
		h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	})
	if d, ok := h.desired.Take(); ok {
		t.Fatalf("Want %v before the ack: revoked claims must be kept", d.Partitions)
	}
	first.Ack() // an old ack changes nothing
	u.Ack()
	u.Ack() // idempotent
	if d := h.nextDesired(); !slices.Equal(d.Partitions, actortest.Parts("t", 0, 2)) {
		t.Fatalf("Want after the ack = %v, want [t:0 t:2]", d.Partitions)
	}
}

func TestShellReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, releaseTimeout: rt})
	settled(t, h, []string{"a"}, 2)
	view := membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1}
	h.sendMembers(view)
	u := h.next()
	if !slices.Equal(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("%+v", u)
	}
	// A round trip: the loop has handled the delivery, and armed the
	// release ReleaseTimeout from it (before, WaitTimers could return on
	// the publication's timer alone, and the Advance below came before
	// the delivery's timer was armed: a 10 s hang seen under load).
	h.sendMembers(view)
	// No ack comes.
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(rt)
	if d := h.nextDesired(); !slices.Equal(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want after the release timeout = %v, want [t:0]", d.Partitions)
	}
}

// The release timeout of a revocation starts when the consumer receives
// it from Updates, at the actor's clock, not when it is published.
func TestShellReleaseTimeoutStartsWhenReceived(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, releaseTimeout: rt})
	settled(t, h, []string{"a"}, 2).Ack()
	view := membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1}
	h.sendMembers(view)
	if u := h.current(4); !slices.Equal(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("after b joined: %+v", u)
	}
	noDesired := func(why string) {
		t.Helper()
		h.sendMembers(view) // a round trip: the actor has handled what came before
		if d, ok := h.desired.Take(); ok {
			t.Fatalf("Want %v %s", d.Partitions, why)
		}
	}
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(rt + rt/2) // the consumer is busy
	// The release is still armed: it was not due (before, it fired at
	// ReleaseTimeout and nothing was armed after it).
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	noDesired("ReleaseTimeout after publication: the consumer has not received the revocation")
	if u := h.next(); !slices.Equal(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("received %+v, want t:1 revoked", u)
	}
	h.sendMembers(view) // the delivery is taken
	h.clock.Advance(rt - time.Nanosecond)
	noDesired("before ReleaseTimeout after the consumer received the revocation")
	h.clock.Advance(time.Nanosecond)
	if d := h.nextDesired(); !slices.Equal(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want after the release timeout = %v, want [t:0]", d.Partitions)
	}
}

// An Update taken from Current and acked before Updates delivers it acks
// it all the same: its revoked claims are released once it is delivered,
// not ReleaseTimeout later. (Before, the ack found nothing to release, as
// the consumer had not received the revocation yet, and the delivery did
// not look again: the claims stayed until the release timeout.)
func TestShellAckFromCurrentBeforeDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 4).Ack()
	parts := func(zxid int64, ids ...int32) partitions.View {
		return partitions.View{Partitions: actortest.Parts("t", ids...), Zxid: zxid, SessionID: 1, Reconnects: 1}
	}

	// t:3 leaves the set; the consumer receives the revocation and does
	// not ack it yet.
	h.sendParts(parts(4, 0, 1, 2))
	if u := h.next(); !slices.Equal(u.Revoked, actortest.Parts("t", 3)) {
		t.Fatalf("after t:3 left: %+v", u)
	}
	// t:2 leaves too. The consumer reads that Update from Current, stops
	// t:3 and t:2 and acks it, before it receives it from Updates. The
	// ack releases t:3 at once (which shows that the actor has taken it).
	h.sendParts(parts(5, 0, 1))
	cur := h.current(5) // the strategy runs off the loop: wait for its answer
	if !slices.Equal(cur.Revoked, actortest.Parts("t", 2)) {
		t.Fatalf("Current after t:2 left: %+v", cur)
	}
	cur.Ack()
	if d := h.nextDesired(); !slices.Equal(d.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("Want after the ack = %v, want [t:0 t:1 t:2]", d.Partitions)
	}
	// Once the consumer receives it, the acked revocation of t:2 is
	// released too.
	if u := h.next(); !slices.Equal(u.Revoked, actortest.Parts("t", 2)) || u.Generation != cur.Generation {
		t.Fatalf("delivered %+v, want the Update acked from Current", u)
	}
	if d := h.nextDesired(); !slices.Equal(d.Partitions, actortest.Parts("t", 0, 1)) {
		t.Fatalf("Want after the delivery = %v, want [t:0 t:1]", d.Partitions)
	}
}

// stuckStrategy is RoundRobin the first time, then blocks until release
// is closed.
type stuckStrategy struct {
	calls   *atomic.Int32
	stuck   chan struct{} // closed when it blocks
	release chan struct{}
}

func (s stuckStrategy) Name() string { return "stuck" }
func (s stuckStrategy) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	if s.calls.Add(1) == 2 {
		close(s.stuck)
		<-s.release
	}
	return rebalance.RoundRobin.Assign(members, parts)
}

// A strategy that does not return holds up neither a revocation nor the
// actor's end: it runs off the actor's loop.
func TestShellStuckStrategyHoldsUpNeitherRevocationNorClose(t *testing.T) {
	t.Parallel()
	s := stuckStrategy{calls: new(atomic.Int32), stuck: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) }) // after the actor has returned
	h := newHarness(t, "a", s, options{})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 2 {
		t.Fatalf("first update %+v", u)
	}
	h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2), Zxid: 4, SessionID: 1, Reconnects: 1})
	select {
	case <-s.stuck:
	case <-h.ctx.Done():
		t.Fatal("the strategy never ran again")
	}
	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 0 || !slices.Equal(u.Revoked, actortest.Parts("t", 0, 1)) {
		t.Fatalf("on suspend with the strategy stuck: %+v, want everything revoked", u)
	}
}

// The shell's Stats follow the core's session, snapshot and counters.
// (These checks were the core's, when the core made a Stats of its own.)
func TestShellStats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 4).Ack()
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	u := h.next() // t:1 and t:3 go to b
	// The shell stores its Stats before it offers the Update it published.
	s := h.a.Stats()
	if s.SessionState != "up" || s.SessionID != 1 || s.Reconnects != 0 || s.Members != 2 || s.Assigned != 2 || s.Pending != 0 || s.Generation != u.Generation {
		t.Errorf("stats %+v after %+v", s, u)
	}
	if s.HandoffsStarted != 2 || s.HandoffsDone != 0 {
		t.Errorf("stats %+v after revoking two, want 2 hand-offs started, none done", s)
	}
	h.up(1, 3)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for h.a.Stats().Reconnects != 2 {
		select {
		case <-tick.C:
		case <-h.ctx.Done():
			t.Fatalf("Reconnects = %d after the third connection, want 2", h.a.Stats().Reconnects)
		}
	}
}

// slowStrategy is RoundRobin that takes took on clock, a fake one.
type slowStrategy struct {
	clock atomic.Pointer[actor.FakeClock]
	took  time.Duration
}

func (s *slowStrategy) Name() string { return "slow" }
func (s *slowStrategy) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	s.clock.Load().Advance(s.took)
	return rebalance.RoundRobin.Assign(members, parts)
}

// The shell counts each strategy run's duration, taken on its clock, in
// Stats.ComputeTimes, beside LastCompute. Without the histogram counted
// by the loop, ComputeTimes stays zero.
func TestShellStatsComputeTimes(t *testing.T) {
	t.Parallel()
	s := &slowStrategy{took: 3 * time.Millisecond}
	h := newHarness(t, "a", s, options{manualClaims: true})
	s.clock.Store(h.clock) // before the first run: runs wait for the views settled sends
	settled(t, h, []string{"a"}, 4).Ack()
	st := h.a.Stats()
	n := st.Computes
	if n == 0 || st.ComputeTimes.Count != n || st.ComputeTimes.Sum != time.Duration(n)*s.took || st.LastCompute != s.took {
		t.Fatalf("stats %+v, want ComputeTimes counting %v for each of its Computes", st, s.took)
	}
	for i, bound := range HistogramBounds() {
		want := uint64(0)
		if s.took <= bound {
			want = n
		}
		if got := st.ComputeTimes.Buckets[i]; got != want {
			t.Errorf("bucket le=%v counts %d runs of %v, want %d", bound, got, s.took, want)
		}
	}
}

// GiveUp makes the shell drain without waiting for the ack: it publishes
// the final Update (Current has it; Updates may close before offering
// it), and returns on the spot, though the consumer never acks and the
// fake clock never reaches ReleaseTimeout.
func TestShellGiveUpEndsTheDrain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 2).Ack()
	h.a.GiveUp()
	h.a.GiveUp() // again: nothing
	for closed := false; !closed; {
		select {
		case u, ok := <-h.a.Updates():
			closed = !ok
			if ok && len(u.Assigned) != 0 {
				t.Fatalf("after GiveUp: %+v", u)
			}
		case <-h.ctx.Done():
			t.Fatal("Run did not return after GiveUp without the ack")
		}
	}
	if u, _ := h.a.Current(); len(u.Assigned) != 0 || !slices.Equal(u.Revoked, actortest.Parts("t", 0, 1)) || u.Cause != RevokeShutdown {
		t.Fatalf("Current after GiveUp: %+v, want everything revoked for a shutdown", u)
	}
	if got := h.a.DrainEnd(); got != decision.DrainGaveUp {
		t.Errorf("DrainEnd %v, want gave up", got)
	}
}

// outdated is a view's Changed check that the test sets.
func outdated(b *atomic.Bool) func() bool { return b.Load }

// recording is RoundRobin that records the members of every run.
type recording struct {
	mu   sync.Mutex
	runs [][]string
}

func (r *recording) Name() string { return "round-robin" }
func (r *recording) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	r.mu.Lock()
	r.runs = append(r.runs, slices.Clone(members))
	r.mu.Unlock()
	return rebalance.RoundRobin.Assign(members, parts)
}

// TestShellComputesOnlyFromViewsThatHold plays the race of issue 26
// between the two lists: c joins at zxid 55 and partitions are added at
// 56; the set's view at 56 arrives before the member list's at 55. The
// member view at 50 is outdated by then (its watch has fired), and the
// shell waits for the newer one instead of computing from the pair and
// reporting 56 with the list of 50, as a member that has both does with
// the list of 55. An outdated view replaced by its like (the same zxid)
// is computed from once the new one holds.
func TestShellComputesOnlyFromViewsThatHold(t *testing.T) {
	t.Parallel()
	rec := &recording{}
	h := newHarness(t, "b", rec, options{})
	h.up(7, 1)
	stale := new(atomic.Bool)
	stale.Store(true)
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 50, SessionID: 7, Reconnects: 1, Changed: outdated(stale)})
	parts := partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3, 4, 5), Zxid: 56, SessionID: 7, Reconnects: 1}
	h.none(func() { h.sendParts(parts) })
	h.none(func() { h.sendParts(parts) }) // the loop has gone round again: still nothing

	h.sendMembers(membership.View{Members: []string{"a", "b", "c"}, Zxid: 55, SessionID: 7, Reconnects: 1})
	u := h.next()
	if u.Generation != 56 || !slices.Equal(u.Members, []string{"a", "b", "c"}) {
		t.Fatalf("update = %+v, want generation 56 over [a b c]", u)
	}
	// A run on the pair would have been started before the list of 55
	// was taken, and have returned before the run on it started.
	rec.mu.Lock()
	runs := slices.Clone(rec.runs)
	rec.mu.Unlock()
	if !slices.EqualFunc(runs, [][]string{{"a", "b", "c"}}, slices.Equal) {
		t.Errorf("strategy run over %v, want only [a b c]", runs)
	}

	// The set's view is outdated: a like one, that holds, replaces it.
	parts.Changed = outdated(stale)
	parts.Zxid = 57
	parts.Partitions = actortest.Parts("t", 0, 1, 2)
	h.none(func() { h.sendParts(parts) })
	parts.Changed = nil
	h.sendParts(parts)
	if u := h.next(); u.Generation != 57 || !slices.Equal(u.Assigned, actortest.Parts("t", 1)) {
		t.Fatalf("update = %+v, want generation 57 with t:1", u)
	}
}

// fakeAssigner stands for the record runner: it answers a job whose
// member view is at least from zxid ready with t:<member count>, and
// holds up any other until its context ends, as a runner whose views
// are older than the record's does.
type fakeAssigner struct {
	ready     int64
	mu        sync.Mutex
	jobs      []decision.Job
	cancelled int
}

func (f *fakeAssigner) Assign(ctx context.Context, job decision.Job) ([]rebalance.Partition, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	if job.MembersZxid >= f.ready {
		return actortest.Parts("t", int32(len(job.Members))), nil
	}
	<-ctx.Done()
	f.mu.Lock()
	f.cancelled++
	f.mu.Unlock()
	return nil, ctx.Err()
}

// RecordCounts counts the jobs as records written, the cancelled ones as
// lost: what the shell passes on to Stats.
func (f *fakeAssigner) RecordCounts() (writes, conflicts uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uint64(len(f.jobs) - f.cancelled), uint64(f.cancelled)
}

// The sticky strategy's runs go to the assigner, with the views' zxids,
// weights and drain marks; a run waiting on the record is cancelled when
// a newer job is due, and the newer one's answer is the assignment.
func TestShellRunsStickyJobsThroughTheAssigner(t *testing.T) {
	t.Parallel()
	f := &fakeAssigner{ready: 20}
	h := newHarness(t, "b", rebalance.StickyStrategy, options{assigner: f})
	h.up(7, 1)
	h.sendParts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3), Zxid: 5, SessionID: 7, Reconnects: 1})
	h.none(func() {
		h.sendMembers(membership.View{Members: []string{"a", "b"}, Weights: []int{1, 3}, Zxid: 10, SessionID: 7, Reconnects: 1})
	})
	h.sendMembers(membership.View{Members: []string{"a", "b", "c"}, Drained: []string{"a"}, Zxid: 20, SessionID: 7, Reconnects: 1})
	u := h.next()
	if u.Generation != 20 || !slices.Equal(u.Assigned, actortest.Parts("t", 3)) {
		t.Fatalf("update = %+v, want generation 20 with the assigner's t:3", u)
	}
	// Stats carries the assigner's counts.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for s := h.a.Stats(); s.RecordWrites != 1 || s.RecordConflicts != 1; s = h.a.Stats() {
		select {
		case <-tick.C:
		case <-h.ctx.Done():
			t.Fatalf("Stats %+v, want the assigner's 1 record written and 1 lost", s)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.jobs) != 2 || f.cancelled != 1 {
		t.Fatalf("assigner got %d jobs, %d cancelled; want 2, the first cancelled", len(f.jobs), f.cancelled)
	}
	first, second := f.jobs[0], f.jobs[1]
	if first.MembersZxid != 10 || first.PartitionsZxid != 5 || first.Weight("b") != 3 || first.Weight("a") != 1 {
		t.Errorf("first job %+v: want zxids 10 and 5, b weighing 3", first)
	}
	if second.MembersZxid != 20 || !slices.Equal(second.Drained, []string{"a"}) || !slices.Equal(second.Live, []string{"a", "b", "c"}) {
		t.Errorf("second job %+v: want zxid 20, a drained, live [a b c]", second)
	}
}
