package decision

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// report sends a Held of session sid, connection reconnects, answering
// Want seq, with held held (the token of t:i is 10+i) and vanished
// vanished.
func (h *core) report(sid int64, reconnects, seq uint64, held []rebalance.Partition, vanished []rebalance.Partition) {
	tokens := make([]int64, len(held))
	for i, p := range held {
		tokens[i] = 10 + int64(p.ID)
	}
	h.c.ClaimsHeld(Held{SessionID: sid, Reconnects: reconnects, Seq: seq, Partitions: held, Tokens: tokens, Vanished: vanished})
	h.drain()
}

// A partition kept through a blip (the grace, or a reconnection before
// the views are read again) is revoked as soon as a claims report of the
// current connection says this session no longer holds it: another
// session took it, or it vanished. Before, it stayed listed until the
// views were read again and the target recomputed: two owners meanwhile.
func TestCoreKeptPartitionsFollowTheClaimsReport(t *testing.T) {
	t.Parallel()
	ts := actortest.Parts("t", 0, 1, 2)
	tests := []struct {
		name      string
		reconnect bool // the session resumes before the report; else the report comes while suspended
		vanished  []rebalance.Partition
	}{
		// Taken by another session or free, the report says the same:
		// not held.
		{"not held, after a reconnection", true, nil},
		{"vanished, after a reconnection", true, ts[1:2]},
		{"not held, during the grace", false, nil},
		{"vanished, during the grace", false, ts[1:2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, grace: time.Hour})
			h.up(1, 1)
			h.members(view(1, 1, 2, "a"))
			h.parts(parts(1, 1, 3, 0, 1, 2))
			d := h.nextDesired()
			h.report(1, 1, d.Seq, d.Partitions, nil)
			h.ack(h.next())

			h.session(session.Suspended, 1, 1)
			h.none() // kept through the grace
			reconnects := uint64(1)
			if tt.reconnect {
				reconnects = 2
				h.up(1, 2) // the views are not read again yet
				h.none()
			}
			h.report(1, reconnects, d.Seq, []rebalance.Partition{ts[0], ts[2]}, tt.vanished)
			u := h.next()
			if !eq(u.Assigned, []rebalance.Partition{ts[0], ts[2]}) || !eq(u.Revoked, ts[1:2]) || !eq(u.Pending, ts[1:2]) {
				t.Fatalf("after the report: %+v, want t:1 revoked (and pending) at once, t:0 and t:2 kept", u)
			}
			if tok, ok := u.Token(ts[2]); !ok || tok != 12 {
				t.Errorf("Token(t:2) = %d, %v, want 12: the claim kept keeps its token", tok, ok)
			}
			if u.Generation != 3 {
				t.Errorf("generation %d, want 3: kept partitions keep theirs", u.Generation)
			}
			// A report of an earlier connection says nothing of this one.
			if tt.reconnect {
				h.report(1, 1, d.Seq, d.Partitions, nil)
				h.none()
			}
		})
	}
}

// A claim deleted from outside while this session's hold record stands
// (Held.Vanished) is revoked at once, but stays wanted while the consumer
// may still work on it, so that its record keeps it from every other
// member; once the consumer has stopped it, it is given up until the
// claims actor says the record is released (a Held answering that
// Want no longer lists it), and only then wanted again, claimed with
// a new token and added again. Before, it stayed wanted for ever, as it
// was in the target: the claims actor keeps the record of a vanished
// claim while it is wanted, so the partition was never consumed again.
func TestCoreVanishedClaimIsStoppedReleasedAndClaimedAgain(t *testing.T) {
	t.Parallel()
	ts := actortest.Parts("t", 0, 1)
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1))
	first := h.nextDesired()
	h.report(1, 1, first.Seq, ts, nil)
	h.ack(h.next())

	h.report(1, 1, first.Seq, ts[:1], ts[1:])
	u := h.next()
	if !eq(u.Assigned, ts[:1]) || !eq(u.Revoked, ts[1:]) || !eq(u.Pending, ts[1:]) {
		t.Fatalf("after t:1 vanished: %+v, want it revoked at once and pending", u)
	}
	h.noDesired("while the consumer may still work on t:1: its record must stand")
	h.ack(u)
	gaveUp := h.nextDesired()
	if !eq(gaveUp.Partitions, ts[:1]) {
		t.Fatalf("Want %v once the consumer stopped t:1, want it given up, so that its record is released", gaveUp.Partitions)
	}
	// Reports that do not answer that Want, or still list the record,
	// do not make it wanted again.
	h.report(1, 1, first.Seq, ts[:1], nil)
	h.noDesired("on a report older than the Want that gave t:1 up")
	h.report(1, 1, gaveUp.Seq, ts[:1], ts[1:])
	h.noDesired("while the report still lists t:1's record")
	h.none()
	// The record is released: t:1 is claimed again.
	h.report(1, 1, gaveUp.Seq, ts[:1], nil)
	again := h.nextDesired()
	if !eq(again.Partitions, ts) {
		t.Fatalf("Want %v once the record was released, want t:1 again", again.Partitions)
	}
	h.none()
	// A report from before the vanish, which listed t:1 held, does not
	// answer the Want that wants it again: it is not assigned on it.
	h.report(1, 1, first.Seq, ts, nil)
	h.none()
	h.c.ClaimsHeld(Held{SessionID: 1, Reconnects: 1, Seq: again.Seq, Partitions: ts, Tokens: []int64{10, 42}})
	h.drain()
	u = h.next()
	if !eq(u.Assigned, ts) || !eq(u.Added, ts[1:]) || len(u.Pending) != 0 {
		t.Fatalf("after the new claim: %+v, want t:1 added again", u)
	}
	if tok, _ := u.Token(ts[1]); tok != 42 {
		t.Errorf("Token(t:1) = %d, want the new claim's, 42", tok)
	}
	if got := h.c.Counters(); got.HandoffsStarted != 1 || got.HandoffsDone != 1 || got.ReleaseTimeouts != 0 {
		t.Errorf("counters %+v, want the vanished claim counted as one hand-off, done", got)
	}
	if !h.hasLog("deleted from outside") {
		t.Errorf("logs %v, want the vanished claim logged", h.logs)
	}
}

// A claim that vanishes during a hand-off is kept (its record) until the
// consumer acks, as any revoked partition. Before, the report that no
// longer listed it as held ended the hand-off at once: its record was
// released before the consumer had stopped, and the next owner took it.
func TestCoreVanishedClaimWaitsForTheAck(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	for _, acked := range []bool{true, false} {
		t.Run(fmt.Sprintf("acked=%v", acked), func(t *testing.T) {
			t.Parallel()
			ts := actortest.Parts("t", 0, 1)
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
			h.ack(h.settled([]string{"a"}, 2))
			h.members(view(1, 1, 4, "a", "b")) // t:1 goes to b
			u := h.next()
			if !eq(u.Revoked, ts[1:]) {
				t.Fatalf("after b joined: %+v", u)
			}
			h.report(1, 1, 1, ts[:1], ts[1:]) // t:1 vanishes (answering the first Want, which settled granted)
			h.noDesired("before the ack: t:1's record must stand")
			if acked {
				h.ack(u)
			} else {
				h.advance(rt)
			}
			gaveUp := h.nextDesired()
			if !eq(gaveUp.Partitions, ts[:1]) {
				t.Fatalf("Want %v, want t:1 given up", gaveUp.Partitions)
			}
			h.report(1, 1, gaveUp.Seq, ts[:1], nil)
			h.noDesired("once t:1's record is released: it is b's")
			want := Counters{HandoffsStarted: 1, HandoffsDone: 1, RevokedHandoff: 1}
			if !acked {
				want.ReleaseTimeouts = 1
			}
			if got := h.c.Counters(); got != want {
				t.Errorf("counters %+v, want %+v", got, want)
			}
		})
	}
}

// A vanished claim the consumer never received is not in use: it is
// given up at once. A new session forgets what vanished in the old one.
func TestCoreVanishedClaimNotReceived(t *testing.T) {
	t.Parallel()
	ts := actortest.Parts("t", 0, 1)
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1))
	first := h.nextDesired()
	h.report(1, 1, first.Seq, ts, nil)
	h.report(1, 1, first.Seq, ts[:1], ts[1:]) // before the consumer received t:1
	if d := h.nextDesired(); !eq(d.Partitions, ts[:1]) {
		t.Fatalf("Want %v, want t:1 given up at once: the consumer never had it", d.Partitions)
	}
	if u := h.next(); !eq(u.Assigned, ts[:1]) || !eq(u.Pending, ts[1:]) {
		t.Fatalf("delivered %+v, want t:0 assigned and t:1 pending", u)
	}
	if got := h.c.Counters(); got.HandoffsStarted != 0 {
		t.Errorf("counters %+v, want no hand-off", got)
	}

	// The session is replaced: its record went with it.
	h.session(session.Lost, 1, 1)
	h.up(2, 2)
	h.members(view(2, 2, 5, "a"))
	h.parts(parts(2, 2, 6, 0, 1))
	if d := h.nextDesired(); !eq(d.Partitions, ts) || d.SessionID != 2 {
		t.Fatalf("Want %+v in the new session, want both", d)
	}
}
