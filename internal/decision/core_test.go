package decision

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

func TestCoreAssignsOnceViewsAreFresh(t *testing.T) {
	t.Parallel()
	h := newCore(t, "b", rebalance.RoundRobin, coreOptions{})
	h.up(7, 1)
	// Views from another session must not be used.
	h.members(view(6, 1, 10, "a", "b"))
	h.parts(partitions.View{Partitions: actortest.Parts("t", 0, 1, 2, 3), Zxid: 12, SessionID: 7, Reconnects: 1})
	h.none()
	h.noDesired("from a view of another session")

	h.members(view(7, 1, 10, "a", "b"))
	u := h.next()
	if u.Generation != 12 || !slices.Equal(u.Members, []string{"a", "b"}) {
		t.Errorf("update = %+v, want generation 12 and members [a b]", u)
	}
	if want := actortest.Parts("t", 1, 3); !eq(u.Assigned, want) || !eq(u.Added, want) || len(u.Revoked) != 0 {
		t.Errorf("Assigned %v Added %v Revoked %v, want %v added", u.Assigned, u.Added, u.Revoked, want)
	}
	if cur := h.current(); cur.Generation != 12 {
		t.Errorf("Current() = %+v", cur)
	}
}

func TestCoreWaitsUntilRegistered(t *testing.T) {
	t.Parallel()
	h := newCore(t, "me", rebalance.RoundRobin, coreOptions{})
	h.up(1, 1)
	h.parts(parts(1, 1, 3, 0))
	h.members(view(1, 1, 4, "other"))
	h.none()
	h.noDesired("before this member is registered")
	h.members(view(1, 1, 5, "me", "other"))
	if u := h.next(); u.Generation != 5 {
		t.Errorf("generation = %d, want 5", u.Generation)
	}
}

func TestCoreRevokesOnSuspendAndWaitsForFreshViews(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	if u := h.alone(0, 1); len(u.Assigned) != 2 {
		t.Fatalf("first update %+v", u)
	}

	h.session(session.Suspended, 1, 1)
	u := h.next()
	if len(u.Assigned) != 0 || !eq(u.Revoked, actortest.Parts("t", 0, 1)) || u.Reason == "" {
		t.Fatalf("on suspend got %+v, want everything revoked with a reason", u)
	}

	// Same session back: the old views are not enough.
	h.up(1, 2)
	h.parts(parts(1, 2, 3, 0, 1))
	h.none()
	h.members(view(1, 2, 2, "a"))
	u = h.next()
	if !eq(u.Assigned, actortest.Parts("t", 0, 1)) || !eq(u.Added, actortest.Parts("t", 0, 1)) {
		t.Fatalf("after resuming got %+v, want both back", u)
	}
}

func TestCoreConflatesWithoutLosingRevocations(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.alone(0, 1, 2, 3)

	// Two changes the consumer does not read in between: the second must
	// still report what the first revoked.
	h.members(view(1, 1, 4, "a", "b"))
	h.members(view(1, 1, 5, "a", "b", "c"))
	u := h.next()
	if u.Generation != 5 {
		t.Fatalf("generation %d, want the newest, 5", u.Generation)
	}
	if want := actortest.Parts("t", 0, 3); !eq(u.Assigned, want) {
		t.Errorf("Assigned %v, want %v", u.Assigned, want)
	}
	if want := actortest.Parts("t", 1, 2); !eq(u.Revoked, want) || len(u.Added) != 0 {
		t.Errorf("Revoked %v Added %v, want %v revoked since the last update received", u.Revoked, u.Added, want)
	}
}

func TestCoreSettles(t *testing.T) {
	t.Parallel()
	const settle = time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{settle: settle})
	h.up(1, 1)
	h.advance(300 * time.Millisecond)
	h.members(view(1, 1, 2, "a"))
	h.advance(300 * time.Millisecond)
	h.parts(parts(1, 1, 3, 0, 1))
	if want := h.now.Add(settle); !h.wake.Equal(want) {
		t.Fatalf("wake at %v, want %v: the quiet period restarts with each change", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(settle - time.Nanosecond)
	h.none()
	h.advance(time.Nanosecond)
	if u := h.next(); u.Generation != 3 {
		t.Fatalf("generation %d, want 3", u.Generation)
	}
	if !h.wake.IsZero() {
		t.Errorf("wake at %v once settled, want none", h.wake.Sub(t0))
	}
}

func TestCoreSettleIsCutShortByABurst(t *testing.T) {
	t.Parallel()
	const settle = time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{settle: settle})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1))
	start := h.now
	for zxid := int64(4); h.now.Sub(start) < settleFactor*settle-settle/2; zxid++ {
		h.advance(settle / 2)
		h.members(view(1, 1, zxid, "a"))
	}
	h.none()
	h.advance(settle/2 - time.Nanosecond)
	h.none()
	h.advance(time.Nanosecond) // settleFactor × settle after the first change
	if u := h.next(); len(u.Assigned) != 2 {
		t.Fatalf("update %+v", u)
	}
}

// brokenStrategy is RoundRobin until mode is set, then fails that way.
type brokenStrategy struct{ mode *string }

func (b brokenStrategy) Name() string { return "broken" }
func (b brokenStrategy) Assign(members []string, ps []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	switch *b.mode {
	case "panic":
		panic("boom")
	case "error":
		return nil, errors.New("no")
	case "drop":
		return map[string][]rebalance.Partition{members[0]: ps[1:]}, nil
	}
	return rebalance.RoundRobin.Assign(members, ps)
}

func TestCoreKeepsAssignmentWhenStrategyFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"panic", "error", "drop"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			broken := brokenStrategy{mode: new(string)}
			h := newCore(t, "a", broken, coreOptions{})
			h.up(1, 1)
			h.members(view(1, 1, 2, "a"))
			h.parts(parts(1, 1, 3, 0, 1, 2))
			if u := h.next(); len(u.Assigned) != 3 {
				t.Fatalf("first update %+v", u)
			}

			*broken.mode = mode
			h.parts(parts(1, 1, 5, 0, 1, 2, 3))
			u := h.next()
			if !eq(u.Assigned, actortest.Parts("t", 0, 1, 2)) || len(u.Revoked) != 0 || len(u.Added) != 0 {
				t.Errorf("after a %s got %+v, want the previous assignment kept", mode, u)
			}
			if !strings.Contains(u.Reason, "strategy failed") {
				t.Errorf("Reason = %q, want the failure reported", u.Reason)
			}
			if !slices.ContainsFunc(h.logs, func(l Log) bool { return strings.Contains(l.Msg, "strategy failed") }) {
				t.Errorf("logs %v, want the failure logged", h.logs)
			}
		})
	}
}

// A computation answered after a newer one was asked for, or after a
// reconnection, is dropped: its view is no longer the newest.
func TestCoreDropsStaleComputations(t *testing.T) {
	t.Parallel()
	c := NewCore(Config{Member: "a", Strategy: "round-robin", ReleaseTimeout: time.Minute}, t0)
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1})
	c.MembersRead(view(1, 1, 2, "a"))
	c.PartitionsRead(parts(1, 1, 3, 0, 1))
	first := c.Ready().Compute
	if first == nil || !slices.Equal(first.Members, []string{"a"}) || first.Gen != 3 {
		t.Fatalf("job %+v, want one over [a] at generation 3", first)
	}
	c.MembersRead(view(1, 1, 4, "a", "b"))
	second := c.Ready().Compute
	if second == nil || second.ID == first.ID || second.Gen != 4 {
		t.Fatalf("job %+v after b joined, want a new one at generation 4", second)
	}
	c.Computed(*first, actortest.Parts("t", 0, 1), nil)
	if r := c.Ready(); r.Want != nil || r.Publish != nil {
		t.Fatalf("the overtaken job's answer was used: %+v", r)
	}
	c.SessionChanged(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1})
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 2})
	c.Ready()
	c.Computed(*second, actortest.Parts("t", 0), nil)
	if r := c.Ready(); r.Want != nil || r.Publish != nil {
		t.Fatalf("an answer for the previous connection was used: %+v", r)
	}
}

func TestHandoffAddsOnlyClaimedPartitions(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1, 2))
	d := h.nextDesired()
	if !eq(d.Partitions, actortest.Parts("t", 0, 1, 2)) || d.SessionID != 1 {
		t.Fatalf("Want = %+v, want all three in session 1", d)
	}
	h.none() // nothing is assigned before the claims are known
	// t:1 is still claimed by its previous owner.
	h.grant(d, actortest.Parts("t", 0, 2)...)
	u := h.next()
	if !eq(u.Assigned, actortest.Parts("t", 0, 2)) || !eq(u.Pending, actortest.Parts("t", 1)) {
		t.Fatalf("Assigned = %v, Pending = %v before t:1 was claimed, want [t:0 t:2] and [t:1]", u.Assigned, u.Pending)
	}
	h.grant(d, actortest.Parts("t", 0, 1, 2)...)
	u = h.next()
	if !eq(u.Added, actortest.Parts("t", 1)) || !eq(u.Assigned, actortest.Parts("t", 0, 1, 2)) || len(u.Pending) > 0 {
		t.Fatalf("after the claim: %+v, want t:1 added and nothing pending", u)
	}
}

func TestHandoffKeepsRevokedClaimUntilAck(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	first := h.settled([]string{"a"}, 4)
	h.ack(first)

	// b joins: a keeps t:0 and t:2, revokes t:1 and t:3.
	h.members(view(1, 1, 4, "a", "b"))
	u := h.next()
	if !eq(u.Revoked, actortest.Parts("t", 1, 3)) || !eq(u.Assigned, actortest.Parts("t", 0, 2)) {
		t.Fatalf("after b joined: %+v", u)
	}
	h.noDesired("before the ack: revoked claims must be kept")
	h.ack(first) // an old ack changes nothing
	h.noDesired("on an ack of an Update before the revocation")
	h.ack(u)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 2)) {
		t.Fatalf("Want after the ack = %v, want [t:0 t:2]", d.Partitions)
	}
	h.ack(u) // idempotent
	h.noDesired("on the same ack again")
	h.none()
}

func TestHandoffOlderAckKeepsNewerPartitions(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	first := h.settled([]string{"a", "b"}, 4) // a has t:0, t:2
	if !eq(first.Assigned, actortest.Parts("t", 0, 2)) {
		t.Fatalf("first: %+v", first)
	}
	// b leaves: a takes t:1 and t:3 too.
	h.members(view(1, 1, 4, "a"))
	d := h.nextDesired()
	h.grant(d, d.Partitions...)
	second := h.next()
	if !eq(second.Assigned, actortest.Parts("t", 0, 1, 2, 3)) {
		t.Fatalf("second: %+v", second)
	}
	// b is back: t:1 and t:3 are revoked again.
	h.members(view(1, 1, 5, "a", "b"))
	third := h.next()
	if !eq(third.Revoked, actortest.Parts("t", 1, 3)) {
		t.Fatalf("third: %+v", third)
	}
	// Acking the first update says nothing about t:1 and t:3, which the
	// second one started.
	h.ack(first)
	h.noDesired("on an ack of the first update: it released claims the second started")
	h.ack(third)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 2)) {
		t.Fatalf("Want after acking the third = %v", d.Partitions)
	}
}

func TestHandoffReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
	h.settled([]string{"a"}, 2)
	h.advance(time.Second)
	h.members(view(1, 1, 4, "a", "b"))
	u := h.next()
	if !eq(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("%+v", u)
	}
	if want := h.now.Add(rt); !h.wake.Equal(want) {
		t.Fatalf("wake at %v, want the release timeout at %v", h.wake.Sub(t0), want.Sub(t0))
	}
	// No ack comes.
	h.advance(rt - time.Nanosecond)
	h.noDesired("before the release timeout")
	h.advance(time.Nanosecond)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want after the release timeout = %v, want [t:0]", d.Partitions)
	}
	if !slices.ContainsFunc(h.logs, func(l Log) bool { return strings.Contains(l.Msg, "ReleaseTimeout") }) {
		t.Errorf("logs %v, want the release timeout logged", h.logs)
	}
}

// An ack stops the release timeout: nothing is due any more.
func TestHandoffAckStopsReleaseTimer(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: 10 * time.Second})
	h.ack(h.settled([]string{"a"}, 2))
	h.members(view(1, 1, 4, "a", "b"))
	u := h.next()
	if h.wake.IsZero() {
		t.Fatal("no release timeout due after a revocation")
	}
	h.ack(u)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want after the ack = %v, want [t:0]", d.Partitions)
	}
	if !h.wake.IsZero() {
		t.Fatalf("wake at %v after the ack, want nothing due", h.wake.Sub(t0))
	}
}

func TestSuspendRevokesAtOnceByDefault(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.alone(0)
	h.session(session.Suspended, 1, 1)
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("%+v", u)
	}
}

func TestGraceKeepsPartitionsThroughABlip(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{grace: grace})
	h.alone(0, 1)

	// A blip shorter than the grace: nothing is revoked.
	h.session(session.Suspended, 1, 1)
	h.none()
	if want := h.now.Add(grace); !h.wake.Equal(want) {
		t.Fatalf("wake at %v while suspended, want the grace's end at %v", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(grace - time.Nanosecond)
	h.none()
	h.up(1, 2)
	if !h.wake.IsZero() {
		t.Fatalf("wake at %v after resuming, want the grace stopped", h.wake.Sub(t0))
	}
	h.members(view(1, 2, 2, "a"))
	h.parts(parts(1, 2, 3, 0, 1))
	h.none()

	// A long one: revoked when the grace runs out.
	h.session(session.Suspended, 1, 2)
	h.parts(parts(1, 2, 3, 0, 1))
	h.none()
	h.advance(grace - time.Nanosecond)
	h.none()
	h.advance(time.Nanosecond)
	if u := h.next(); len(u.Assigned) != 0 || !eq(u.Revoked, actortest.Parts("t", 0, 1)) {
		t.Fatalf("after the grace: %+v, want everything revoked", u)
	}
}

func TestGraceEndsWhenTheSessionIsLost(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{grace: time.Hour})
	h.alone(0)
	h.session(session.Suspended, 1, 1)
	h.none() // kept through the grace
	h.session(session.Lost, 1, 1)
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("after Lost: %+v, want everything revoked", u)
	}
	if !h.wake.IsZero() {
		t.Errorf("wake at %v after Lost, want the grace stopped", h.wake.Sub(t0))
	}
}

// TestHandoffIgnoresOvertakenClaims is the case the chaos test found: a
// Held report listing a claim that a later Want has given up (and
// another member may have taken since) must not let the partition be
// assigned again when it is wanted back.
func TestHandoffIgnoresOvertakenClaims(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 2))

	h.members(view(1, 1, 4, "a", "b"))
	h.ack(h.next())
	gaveUp := h.nextDesired()
	if !eq(gaveUp.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want %v, want t:1 given up", gaveUp.Partitions)
	}
	// The claims actor has not answered yet (its last report still lists
	// t:1) when b leaves again.
	h.members(view(1, 1, 5, "a"))
	back := h.nextDesired()
	if !eq(back.Partitions, actortest.Parts("t", 0, 1)) {
		t.Fatalf("Want %v, want t:1 back", back.Partitions)
	}
	if u := h.next(); u.Generation != 5 || !eq(u.Assigned, actortest.Parts("t", 0)) {
		t.Fatalf("update %+v on a stale report, want generation 5 with only t:0", u)
	}
	h.grant(gaveUp, actortest.Parts("t", 0)...) // the release went through
	h.none()
	h.grant(back, actortest.Parts("t", 0, 1)...) // and t:1 is claimed again
	if u := h.next(); !eq(u.Assigned, actortest.Parts("t", 0, 1)) {
		t.Fatalf("Assigned %v after the claim, want both", u.Assigned)
	}
}

// TestHandoffKeepsUnackedClaimsUntilClaimsReport: after a reconnection in
// the same session, the claims actor has not yet said which claims it
// still holds. A view that moves a partition away in that window must not
// make the core give up the claim of a partition the consumer may still
// be working on, or its next owner could take it meanwhile.
func TestHandoffKeepsUnackedClaimsUntilClaimsReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		grace time.Duration
		lost  bool // the lease ran out (Lost without Ended) before the session resumed
	}{
		{"revoked on suspend", 0, false},
		{"kept through the grace", time.Hour, false},
		{"revoked when the lease ran out", time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, grace: tt.grace})
			h.ack(h.settled([]string{"a"}, 2))

			h.session(session.Suspended, 1, 1)
			if tt.lost {
				h.none()
				h.session(session.Lost, 1, 1)
			}
			if tt.grace == 0 || tt.lost {
				if u := h.next(); len(u.Assigned) != 0 {
					t.Fatalf("on suspend: %+v, want everything revoked", u)
				}
				// The consumer does not ack: it may still be working on both.
			} else {
				h.none()
			}
			// The session resumes; b has joined meanwhile, so t:1 moves to
			// b, and the views say so before the claims actor has reported.
			h.up(1, 2)
			h.members(view(1, 2, 4, "a", "b"))
			h.parts(parts(1, 2, 3, 0, 1))
			d := h.nextDesired()
			if !eq(d.Partitions, actortest.Parts("t", 0, 1)) || d.SessionID != 1 || d.Reconnects != 2 {
				t.Fatalf("Want %+v before the claims report, want [t:0 t:1] in session 1, reconnection 2: t:1 is not acked", d)
			}
			if tt.grace == 0 || tt.lost {
				if u := h.next(); u.Generation != 4 || len(u.Assigned) != 0 {
					t.Fatalf("update %+v, want generation 4 with nothing assigned", u)
				}
			} else {
				// The partitions kept through the grace stay in generation
				// 3, where they were assigned: generation 4 gives t:1 to b.
				h.none()
			}

			h.grant(d, actortest.Parts("t", 0, 1)...) // both claims survived the reconnection
			u := h.next()
			if !eq(u.Assigned, actortest.Parts("t", 0)) || u.Generation != 4 {
				t.Fatalf("after the claims report: %+v, want only t:0 assigned in generation 4", u)
			}
			h.noDesired("on the claims report: t:1 given up before the ack")
			h.ack(u)
			if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
				t.Fatalf("Want after the ack = %v, want [t:0]", d.Partitions)
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
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
			h.ack(h.settled([]string{"a"}, 2))
			h.members(view(1, 1, 4, "a", "b"))
			if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 1)) {
				t.Fatalf("after b joined: %+v, want t:1 revoked", u)
			}
			// No ack comes.
			h.advance(rt / 2)

			h.session(session.Suspended, 1, 1)
			if u := h.next(); len(u.Assigned) != 0 {
				t.Fatalf("on suspend: %+v, want everything revoked", u)
			}
			h.up(1, 2)
			h.members(view(1, 2, 4, "a", "b"))
			h.parts(parts(1, 2, 3, 0, 1))
			d := h.nextDesired()
			if !eq(d.Partitions, actortest.Parts("t", 0, 1)) {
				t.Fatalf("Want %v before the claims report and %v before the release timeout, want t:1 kept", d.Partitions, rt/2)
			}
			if tt.beforeReport {
				h.advance(rt / 2)
				h.noDesired("before the claims report")
			}

			h.grant(d, actortest.Parts("t", 0, 1)...)
			if u := h.next(); !eq(u.Assigned, actortest.Parts("t", 0)) {
				t.Fatalf("after the claims report: %+v, want t:0 assigned", u)
			}
			if !tt.beforeReport {
				h.noDesired(fmt.Sprintf("on the claims report, %v before the release timeout", rt/2))
				h.advance(rt/2 - time.Nanosecond)
				h.noDesired("before the release timeout: it restarted with the reconnection")
				h.advance(time.Nanosecond)
			}
			if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
				t.Fatalf("Want %v once the release timeout has passed, want [t:0]", d.Partitions)
			}
		})
	}
}

// TestHandoffDoesNotAddUpTargetsBeforeClaimsReport: while the claims are
// unknown after a reconnection, each view's target is asked for with the
// claims the hand-off last kept, not with every target in between.
func TestHandoffDoesNotAddUpTargetsBeforeClaimsReport(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 2))

	h.session(session.Suspended, 1, 1)
	if u := h.next(); len(u.Assigned) != 0 {
		t.Fatalf("on suspend: %+v, want everything revoked", u)
	}
	h.up(1, 2)
	h.members(view(1, 2, 4, "a"))
	h.parts(parts(1, 2, 5, 0, 1, 2))
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("Want %v after the first view, want [t:0 t:1 t:2]", d.Partitions)
	}
	h.parts(parts(1, 2, 6, 0, 1, 3))
	if d, want := h.nextDesired(), actortest.Parts("t", 0, 1, 3); !eq(d.Partitions, want) {
		t.Fatalf("Want %v after the second view, want %v: t:2 was never the consumer's", d.Partitions, want)
	}
}

// An Update taken from Current and acked before it is delivered acks it
// all the same: its revoked claims are released once it is delivered,
// not ReleaseTimeout later.
func TestHandoffAckFromCurrentBeforeDelivery(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 4))

	// t:3 leaves the set; the consumer receives the revocation and does
	// not ack it yet.
	h.parts(parts(1, 1, 4, 0, 1, 2))
	if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 3)) {
		t.Fatalf("after t:3 left: %+v", u)
	}
	// t:2 leaves too. The consumer reads that Update from Current, stops
	// t:3 and t:2 and acks it, before it receives it.
	h.parts(parts(1, 1, 5, 0, 1))
	cur := h.current()
	if !eq(cur.Revoked, actortest.Parts("t", 2)) {
		t.Fatalf("Current after t:2 left: %+v", cur)
	}
	h.ack(cur)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("Want after the ack = %v, want [t:0 t:1 t:2]", d.Partitions)
	}
	// Once the consumer receives it, the acked revocation of t:2 is
	// released too.
	if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 2)) || u.Generation != cur.Generation {
		t.Fatalf("delivered %+v, want the Update acked from Current", u)
	}
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 1)) {
		t.Fatalf("Want after the delivery = %v, want [t:0 t:1]", d.Partitions)
	}
}

// An ack of an Update taken from Current does not release what a later
// Update revoked: the consumer acked having stopped what the acked Update
// revoked, and it still assigned those.
func TestHandoffAckFromCurrentKeepsLaterRevocations(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 5))

	// t:4 leaves the set: the consumer receives that, and has not acked
	// it yet.
	h.parts(parts(1, 1, 4, 0, 1, 2, 3))
	if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 4)) {
		t.Fatalf("after t:4 left: %+v", u)
	}
	// t:3 leaves: the consumer reads that Update from Current.
	h.parts(parts(1, 1, 5, 0, 1, 2))
	cur := h.current()
	if !eq(cur.Revoked, actortest.Parts("t", 3)) || !eq(cur.Assigned, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("Current after t:3 left: %+v", cur)
	}
	// t:2 leaves, and the consumer receives that Update (revoking t:2 and
	// t:3) before it acks the one it read from Current.
	h.parts(parts(1, 1, 6, 0, 1))
	if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 2, 3)) {
		t.Fatalf("after t:2 left: %+v", u)
	}
	h.ack(cur)
	// t:4 is released: that ack covers its revocation. t:3 is kept too,
	// conservatively: the ack is older than the delivered Update that
	// revoked it.
	d := h.nextDesired()
	if !eq(d.Partitions, actortest.Parts("t", 0, 1, 2, 3)) {
		t.Fatalf("Want after acking the Update from Current = %v, want t:4 released and t:2 kept", d.Partitions)
	}
}
