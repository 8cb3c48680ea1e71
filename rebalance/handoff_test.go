package rebalance_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// settled brings a manual-claims harness to a first assignment of
// members over t:0..n-1 with every wanted claim granted, and returns it.
func settled(t *testing.T, h *harness, members []string, n int32) rebalance.Update {
	t.Helper()
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	h.up(1, 1)
	h.sendMembers(membership.View{Members: members, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", ids...), Zxid: 3, SessionID: 1, Reconnects: 1})
	d := h.nextDesired()
	h.grant(d, d.Want...)
	return h.next()
}

// grant answers d with the given claims held.
func (h *harness) grant(d claims.Desired, held ...partitions.Partition) {
	h.held.Set(claims.Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Held: held})
}

func TestHandoffAddsOnlyClaimedPartitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2), Zxid: 3, SessionID: 1, Reconnects: 1})
	d := h.nextDesired()
	if !slices.Equal(d.Want, ps("t", 0, 1, 2)) || d.SessionID != 1 {
		t.Fatalf("Desired = %+v, want all three in session 1", d)
	}
	// t:1 is still claimed by its previous owner.
	h.grant(d, ps("t", 0, 2)...)
	u := h.next()
	if !slices.Equal(u.Assigned, ps("t", 0, 2)) || !slices.Equal(u.Pending, ps("t", 1)) {
		t.Fatalf("Assigned = %v, Pending = %v before t:1 was claimed, want [t:0 t:2] and [t:1]", u.Assigned, u.Pending)
	}
	select {
	case <-h.a.Ready():
	default:
		t.Fatal("Ready not closed although the claims actor answered")
	}
	h.grant(d, ps("t", 0, 1, 2)...)
	u = h.next()
	if !slices.Equal(u.Added, ps("t", 1)) || !slices.Equal(u.Assigned, ps("t", 0, 1, 2)) || len(u.Pending) > 0 {
		t.Fatalf("after the claim: %+v, want t:1 added and nothing pending", u)
	}
}

func TestHandoffKeepsRevokedClaimUntilAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	first := settled(t, h, []string{"a"}, 4)
	first.Ack()

	// b joins: a keeps t:0 and t:2, revokes t:1 and t:3.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	u := h.next()
	if !slices.Equal(u.Revoked, ps("t", 1, 3)) || !slices.Equal(u.Assigned, ps("t", 0, 2)) {
		t.Fatalf("after b joined: %+v", u)
	}
	// The revoked claims are kept: nothing new is desired.
	h.none(func() {
		h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	})
	if d, ok := h.desired.Take(); ok {
		t.Fatalf("Desired %v before the ack: revoked claims must be kept", d.Want)
	}
	first.Ack() // an old ack changes nothing
	u.Ack()
	u.Ack() // idempotent
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0, 2)) {
		t.Fatalf("Desired after the ack = %v, want [t:0 t:2]", d.Want)
	}
}

func TestHandoffOlderAckKeepsNewerPartitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	first := settled(t, h, []string{"a", "b"}, 4) // a has t:0, t:2
	if !slices.Equal(first.Assigned, ps("t", 0, 2)) {
		t.Fatalf("first: %+v", first)
	}
	// b leaves: a takes t:1 and t:3 too.
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	d := h.nextDesired()
	h.grant(d, d.Want...)
	second := h.next()
	if !slices.Equal(second.Assigned, ps("t", 0, 1, 2, 3)) {
		t.Fatalf("second: %+v", second)
	}
	// b is back: t:1 and t:3 are revoked again.
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 5, SessionID: 1, Reconnects: 1})
	third := h.next()
	if !slices.Equal(third.Revoked, ps("t", 1, 3)) {
		t.Fatalf("third: %+v", third)
	}
	// Acking the first update says nothing about t:1 and t:3, which the
	// second one started.
	first.Ack()
	h.none(func() {
		h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 5, SessionID: 1, Reconnects: 1})
	})
	select {
	case d := <-waitDesired(h):
		t.Fatalf("an ack of the first update released claims: %v", d.Want)
	default:
	}
	third.Ack()
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0, 2)) {
		t.Fatalf("Desired after acking the third = %v", d.Want)
	}
}

// waitDesired returns a channel with the pending Desired, if any.
func waitDesired(h *harness) <-chan claims.Desired {
	out := make(chan claims.Desired, 1)
	if d, ok := h.desired.Take(); ok {
		out <- d
	}
	return out
}

func TestHandoffReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, releaseTimeout: rt})
	settled(t, h, []string{"a"}, 2)
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	u := h.next()
	if !slices.Equal(u.Revoked, ps("t", 1)) {
		t.Fatalf("%+v", u)
	}
	// No ack comes.
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(rt)
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0)) {
		t.Fatalf("Desired after the release timeout = %v, want [t:0]", d.Want)
	}
}

// An ack stops the release timeout: nothing is due any more.
func TestHandoffAckStopsReleaseTimer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, releaseTimeout: 10 * time.Second})
	settled(t, h, []string{"a"}, 2).Ack()
	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	u := h.next()
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
	u.Ack()
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0)) {
		t.Fatalf("Desired after the ack = %v, want [t:0]", d.Want)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	if err := h.clock.WaitNoTimers(ctx); err != nil {
		t.Fatalf("%d timers still waiting after the ack: %v", h.clock.Timers(), err)
	}
}

func TestSuspendRevokesAtOnceByDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	h.sendParts(partitions.View{Parts: ps("t", 0), Zxid: 3, SessionID: 1, Reconnects: 1})
	h.next()
	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("%+v", u)
	}
}

func TestGraceKeepsPartitionsThroughABlip(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	h := newHarness(t, "a", rebalance.RoundRobin, options{grace: grace})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	parts := partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 1}
	h.sendParts(parts)
	h.next()

	// A blip shorter than the grace: nothing is revoked.
	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	waitGraceTimer(t, h) // the suspension is seen, not replaced by the next state
	h.none(func() { h.sendParts(parts) })
	h.up(1, 2)
	waitNoGraceTimer(t, h) // the resumption is seen before the views of its connection
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 2})
	h.none(func() { h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 2}) })

	// A long one: revoked when the grace runs out.
	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 2})
	waitGraceTimer(t, h) // armed before the clock moves past it
	h.none(func() { h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 2}) })
	h.clock.Advance(grace)
	if u := h.next(); len(u.Assigned) != 0 || !slices.Equal(u.Revoked, ps("t", 0, 1)) {
		t.Fatalf("after the grace: %+v, want everything revoked", u)
	}
}

// waitGraceTimer waits until the actor has armed its grace timer, the only
// timer it runs while suspended with nothing revoked: it has taken the
// suspension. Neither a view sent after it (the actor's select picks any
// ready input) nor h.none proves that.
func waitGraceTimer(t *testing.T, h *harness) {
	t.Helper()
	if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// waitNoGraceTimer waits until the actor has stopped its grace timer, which
// it does on taking a resumption.
func waitNoGraceTimer(t *testing.T, h *harness) {
	t.Helper()
	if err := h.clock.WaitNoTimers(h.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestGraceEndsWhenTheSessionIsLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{grace: time.Hour})
	h.up(1, 1)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 2, SessionID: 1, Reconnects: 1})
	parts := partitions.View{Parts: ps("t", 0), Zxid: 3, SessionID: 1, Reconnects: 1}
	h.sendParts(parts)
	h.next()
	// The actor must take the suspension, or Lost would revoke from Up and
	// the grace would not be tested.
	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	waitGraceTimer(t, h)
	h.none(func() { h.sendParts(parts) }) // kept through the grace
	h.session.Set(session.State{Status: session.Lost, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("after Lost: %+v, want everything revoked", u)
	}
}

// TestHandoffIgnoresOvertakenClaims is the case the chaos test found: a
// Held report listing a claim that a later Desired has given up (and
// another member may have taken since) must not let the partition be
// assigned again when it is wanted back.
func TestHandoffIgnoresOvertakenClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 2).Ack()

	h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
	h.next().Ack()
	gaveUp := h.nextDesired()
	if !slices.Equal(gaveUp.Want, ps("t", 0)) {
		t.Fatalf("Desired %v, want t:1 given up", gaveUp.Want)
	}
	// The claims actor has not answered yet (its last report still lists
	// t:1) when b leaves again.
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 5, SessionID: 1, Reconnects: 1})
	back := h.nextDesired()
	if !slices.Equal(back.Want, ps("t", 0, 1)) {
		t.Fatalf("Desired %v, want t:1 back", back.Want)
	}
	if u := h.next(); u.Generation != 5 || !slices.Equal(u.Assigned, ps("t", 0)) {
		t.Fatalf("update %+v on a stale report, want generation 5 with only t:0", u)
	}
	h.grant(gaveUp, ps("t", 0)...) // the release went through
	h.none(func() { h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 5, SessionID: 1, Reconnects: 1}) })
	h.grant(back, ps("t", 0, 1)...) // and t:1 is claimed again
	if u := h.next(); !slices.Equal(u.Assigned, ps("t", 0, 1)) {
		t.Fatalf("Assigned %v after the claim, want both", u.Assigned)
	}
}

// TestHandoffKeepsUnackedClaimsUntilClaimsReport: after a reconnection in
// the same session, the claims actor has not yet said which claims it
// still holds. A view that moves a partition away in that window must not
// make the actor give up the claim of a partition the consumer may still
// be working on, or its next owner could take it meanwhile.
func TestHandoffKeepsUnackedClaimsUntilClaimsReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		grace time.Duration
	}{
		{"revoked on suspend", 0},
		{"kept through the grace", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, grace: tt.grace})
			settled(t, h, []string{"a"}, 2).Ack()

			// The actor must see the suspension: were it to take a view of
			// the next connection while still up in this one, that view
			// would count as fresh and the claims report as current.
			h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
			if tt.grace == 0 {
				if u := h.next(); len(u.Assigned) != 0 {
					t.Fatalf("on suspend: %+v, want everything revoked", u)
				}
				// The consumer does not ack: it may still be working on both.
			} else {
				waitGraceTimer(t, h)
			}
			// The session resumes; b has joined meanwhile, so t:1 moves to
			// b, and the views say so before the claims actor has reported.
			h.up(1, 2)
			h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 2})
			h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 2})
			d := h.nextDesired()
			if !slices.Equal(d.Want, ps("t", 0, 1)) || d.SessionID != 1 || d.Reconnects != 2 {
				t.Fatalf("Desired %+v before the claims report, want [t:0 t:1] in session 1, reconnection 2: t:1 is not acked", d)
			}
			// Desired follows the update of the same reconciliation.
			if tt.grace == 0 {
				if u := h.next(); u.Generation != 4 || len(u.Assigned) != 0 {
					t.Fatalf("update %+v, want generation 4 with nothing assigned", u)
				}
			} else {
				// The partitions kept through the grace stay in generation
				// 2, where they were assigned: generation 4 gives t:1 to b.
				h.none(func() {})
			}

			h.grant(d, ps("t", 0, 1)...) // both claims survived the reconnection
			u := h.next()
			if !slices.Equal(u.Assigned, ps("t", 0)) || u.Generation != 4 {
				t.Fatalf("after the claims report: %+v, want only t:0 assigned in generation 4", u)
			}
			if d, ok := h.desired.Take(); ok {
				t.Fatalf("Desired %v on the claims report: t:1 given up before the ack", d.Want)
			}
			u.Ack()
			if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0)) {
				t.Fatalf("Desired after the ack = %v, want [t:0]", d.Want)
			}
		})
	}
}

// TestHandoffReleaseTimeoutRunsThroughReconnect: a revoked partition the
// consumer never acks is released ReleaseTimeout after its revocation,
// counted across a reconnection, not restarted by it; if the timeout
// passes before the claims actor has reported after the reconnection, the
// partition is released on the report.
func TestHandoffReleaseTimeoutRunsThroughReconnect(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	tests := []struct {
		name         string
		beforeReport bool // the timeout passes before the claims report
	}{
		{"timeout after the report", false},
		{"timeout before the report", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true, releaseTimeout: rt})
			settled(t, h, []string{"a"}, 2).Ack()
			h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 1})
			if u := h.next(); !slices.Equal(u.Revoked, ps("t", 1)) {
				t.Fatalf("after b joined: %+v, want t:1 revoked", u)
			}
			// No ack comes.
			if err := h.clock.WaitTimers(h.ctx, 1); err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(rt / 2)

			h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
			if u := h.next(); len(u.Assigned) != 0 {
				t.Fatalf("on suspend: %+v, want everything revoked", u)
			}
			h.up(1, 2)
			h.sendMembers(membership.View{Members: []string{"a", "b"}, Zxid: 4, SessionID: 1, Reconnects: 2})
			h.sendParts(partitions.View{Parts: ps("t", 0, 1), Zxid: 3, SessionID: 1, Reconnects: 2})
			d := h.nextDesired()
			if !slices.Equal(d.Want, ps("t", 0, 1)) {
				t.Fatalf("Desired %v before the claims report and %v before the release timeout, want t:1 kept", d.Want, rt/2)
			}
			if tt.beforeReport {
				h.clock.Advance(rt / 2)
			}

			h.grant(d, ps("t", 0, 1)...)
			if u := h.next(); !slices.Equal(u.Assigned, ps("t", 0)) {
				t.Fatalf("after the claims report: %+v, want t:0 assigned", u)
			}
			if !tt.beforeReport {
				if d, ok := h.desired.Take(); ok {
					t.Fatalf("Desired %v on the claims report, %v before the release timeout", d.Want, rt/2)
				}
				h.clock.Advance(rt / 2)
			}
			if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0)) {
				t.Fatalf("Desired %v once the release timeout has passed, want [t:0]", d.Want)
			}
		})
	}
}

// TestHandoffDoesNotAddUpTargetsBeforeClaimsReport: while the claims are
// unknown after a reconnection, each view's target is asked for with the
// claims the hand-off last kept, not with every target in between.
func TestHandoffDoesNotAddUpTargetsBeforeClaimsReport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 2).Ack()

	h.session.Set(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("on suspend: %+v, want everything revoked", u)
	}
	h.up(1, 2)
	h.sendMembers(membership.View{Members: []string{"a"}, Zxid: 4, SessionID: 1, Reconnects: 2})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 2), Zxid: 5, SessionID: 1, Reconnects: 2})
	h.sendParts(partitions.View{Parts: ps("t", 0, 1, 3), Zxid: 6, SessionID: 1, Reconnects: 2})
	for {
		d := h.nextDesired()
		if slices.Contains(d.Want, partitions.Partition{Topic: "t", ID: 3}) {
			if want := ps("t", 0, 1, 3); !slices.Equal(d.Want, want) {
				t.Fatalf("Desired %v after the second view, want %v: t:2 was never the consumer's", d.Want, want)
			}
			break
		}
	}
}
