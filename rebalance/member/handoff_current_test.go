package member_test

import (
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// An Update taken from Current and acked before Updates delivers it acks
// it all the same: its revoked claims are released once it is delivered,
// not ReleaseTimeout later. (Before, the ack found nothing to release, as
// the consumer had not received the revocation yet, and the delivery did
// not look again: the claims stayed until the release timeout.)
func TestHandoffAckFromCurrentBeforeDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 4).Ack()
	parts := func(zxid int64, ids ...int32) partitions.View {
		return partitions.View{Parts: ps("t", ids...), Zxid: zxid, SessionID: 1, Reconnects: 1}
	}

	// t:3 leaves the set; the consumer receives the revocation and does
	// not ack it yet.
	h.sendParts(parts(4, 0, 1, 2))
	if u := h.next(); !slices.Equal(u.Revoked, ps("t", 3)) {
		t.Fatalf("after t:3 left: %+v", u)
	}
	// t:2 leaves too. The consumer reads that Update from Current, stops
	// t:3 and t:2 and acks it, before it receives it from Updates. The
	// ack releases t:3 at once (which shows that the actor has taken it).
	h.sendParts(parts(5, 0, 1))
	h.sendParts(parts(5, 0, 1)) // a round trip: the actor has published
	cur, _ := h.a.Current()
	if !slices.Equal(cur.Revoked, ps("t", 2)) {
		t.Fatalf("Current after t:2 left: %+v", cur)
	}
	cur.Ack()
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0, 1, 2)) {
		t.Fatalf("Desired after the ack = %v, want [t:0 t:1 t:2]", d.Want)
	}
	// Once the consumer receives it, the acked revocation of t:2 is
	// released too.
	if u := h.next(); !slices.Equal(u.Revoked, ps("t", 2)) || u.Generation != cur.Generation {
		t.Fatalf("delivered %+v, want the Update acked from Current", u)
	}
	if d := h.nextDesired(); !slices.Equal(d.Want, ps("t", 0, 1)) {
		t.Fatalf("Desired after the delivery = %v, want [t:0 t:1]", d.Want)
	}
}

// An ack of an Update taken from Current does not release what a later
// Update revoked: the consumer acked having stopped what the acked Update
// revoked, and it still assigned those. (Before, the delivered Update's
// revocations counted as acked by any ack newer than the Update delivered
// before it, so the claim on t:2 went while the consumer had yet to stop
// it, and another member could take it.)
func TestHandoffAckFromCurrentKeepsLaterRevocations(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "a", rebalance.RoundRobin, options{manualClaims: true})
	settled(t, h, []string{"a"}, 5).Ack()
	parts := func(zxid int64, ids ...int32) partitions.View {
		return partitions.View{Parts: ps("t", ids...), Zxid: zxid, SessionID: 1, Reconnects: 1}
	}

	// t:4 leaves the set: the consumer receives that, and has not acked
	// it yet.
	h.sendParts(parts(4, 0, 1, 2, 3))
	if u := h.next(); !slices.Equal(u.Revoked, ps("t", 4)) {
		t.Fatalf("after t:4 left: %+v", u)
	}
	// t:3 leaves: the consumer reads that Update from Current.
	h.sendParts(parts(5, 0, 1, 2))
	h.sendParts(parts(5, 0, 1, 2)) // a round trip: the actor has published
	cur, _ := h.a.Current()
	if !slices.Equal(cur.Revoked, ps("t", 3)) || !slices.Equal(cur.Assigned, ps("t", 0, 1, 2)) {
		t.Fatalf("Current after t:3 left: %+v", cur)
	}
	// t:2 leaves, and the consumer receives that Update (revoking t:2 and
	// t:3) before it acks the one it read from Current.
	h.sendParts(parts(6, 0, 1))
	if u := h.next(); !slices.Equal(u.Revoked, ps("t", 2, 3)) {
		t.Fatalf("after t:2 left: %+v", u)
	}
	cur.Ack()
	d := h.nextDesired() // t:4 released: that ack covers its revocation
	if slices.Contains(d.Want, ps("t", 4)[0]) || !slices.Contains(d.Want, ps("t", 2)[0]) {
		t.Fatalf("Desired after acking the Update from Current = %v, want t:4 released and t:2 kept", d.Want)
	}
}
