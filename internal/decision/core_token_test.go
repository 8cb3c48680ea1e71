package decision

import (
	"testing"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// holdTokens answers d with held, whose claims have the given tokens.
func (h *core) holdTokens(d Want, held []rebalance.Partition, tokens ...int64) {
	h.c.ClaimsHeld(Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Partitions: held, Tokens: tokens})
	h.drain()
}

// wantTokens checks u's token of each partition: 0 for none.
func wantTokens(t *testing.T, u Update, want map[rebalance.Partition]int64) {
	t.Helper()
	for p, w := range want {
		got, ok := u.Token(p)
		if ok != (w != 0) || got != w {
			t.Errorf("Token(%s) = %d, %v; want %d", p, got, ok, w)
		}
	}
}

// An Update carries the token of each claim it lists in Assigned, as the
// claims actor reported it: the same while the partition is kept, the new
// claim's once it is claimed again, none for a partition not assigned.
func TestCoreTokens(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	ts := actortest.Parts("t", 0, 1, 2)
	t0, t1, t2 := ts[0], ts[1], ts[2]
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1))
	d := h.nextDesired()
	h.holdTokens(d, ts[:2], 10, 11)
	wantTokens(t, h.next(), map[rebalance.Partition]int64{t0: 10, t1: 11, t2: 0})

	// b joins: t:1 is revoked, and has no token here any more; t:0 keeps
	// its own.
	h.members(view(1, 1, 4, "a", "b"))
	u := h.next()
	if !eq(u.Revoked, ts[1:2]) {
		t.Fatalf("update %+v, want t:1 revoked", u)
	}
	wantTokens(t, u, map[rebalance.Partition]int64{t0: 10, t1: 0})
	h.ack(u)
	d = h.nextDesired()
	h.holdTokens(d, ts[:1], 10)
	h.none()

	// b leaves: t:1 is claimed again, a new claim with a larger token.
	h.members(view(1, 1, 5, "a"))
	d = h.nextDesired()
	h.holdTokens(d, ts[:2], 10, 25)
	u = h.next()
	if !eq(u.Added, ts[1:2]) {
		t.Fatalf("update %+v, want t:1 added", u)
	}
	wantTokens(t, u, map[rebalance.Partition]int64{t0: 10, t1: 25})

	// t:0's claim is reported with a new token (a claim created again):
	// the same assignment, published again with the new token.
	h.holdTokens(d, ts[:2], 30, 25)
	u = h.next()
	if len(u.Added) != 0 || len(u.Revoked) != 0 || !eq(u.Assigned, ts[:2]) {
		t.Fatalf("update %+v, want the same assignment", u)
	}
	wantTokens(t, u, map[rebalance.Partition]int64{t0: 30, t1: 25})
	if _, ok := (Update{}).Token(t0); ok {
		t.Error("the zero Update has a token")
	}
}

// A claim the claims actor no longer holds (deleted from outside and
// taken by another session) is revoked at once, and listed Pending while
// the target still gives it to this member; its token goes with it.
func TestCoreRevokesAClaimNoLongerHeld(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	ts := actortest.Parts("t", 0, 1)
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1))
	d := h.nextDesired()
	h.holdTokens(d, ts, 10, 11)
	h.next()

	h.c.ClaimsHeld(Held{SessionID: 1, Reconnects: 1, Seq: d.Seq, Partitions: ts[1:], Tokens: []int64{11}}) // t:0 taken by another session
	h.drain()
	u := h.next()
	if !eq(u.Revoked, ts[:1]) || !eq(u.Assigned, ts[1:]) || !eq(u.Pending, ts[:1]) {
		t.Fatalf("update %+v, want t:0 revoked and pending", u)
	}
	wantTokens(t, u, map[rebalance.Partition]int64{ts[0]: 0, ts[1]: 11})
	h.noDesired("while t:0 is still targeted")
}
