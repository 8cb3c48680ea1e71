package member

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// report sends a Held of session sid, connection reconnects, answering
// Desired seq, with held held (the token of t:i is 10+i) and the rest as
// given.
func (h *core) report(sid int64, reconnects, seq uint64, held []Partition, vanished []Partition, blocked ...claims.Blocked) {
	tokens := make([]int64, len(held))
	for i, p := range held {
		tokens[i] = 10 + int64(p.ID)
	}
	h.c.Held(claims.Held{SessionID: sid, Reconnects: reconnects, Seq: seq, Held: held, Tokens: tokens, Vanished: vanished, Blocked: blocked})
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
		vanished  []Partition
		blocked   []claims.Blocked
	}{
		{"taken by another session, after a reconnection", true, nil, []claims.Blocked{{Partition: ts[1], Session: 9}}},
		{"vanished, after a reconnection", true, ts[1:2], nil},
		{"not held, after a reconnection", true, nil, nil},
		{"taken by another session, during the grace", false, nil, []claims.Blocked{{Partition: ts[1], Session: 9}}},
		{"vanished, during the grace", false, ts[1:2], nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, grace: time.Hour})
			h.up(1, 1)
			h.members(view(1, 1, 2, "a"))
			h.parts(parts(1, 1, 3, 0, 1, 2))
			d := h.nextDesired()
			h.report(1, 1, d.Seq, d.Want, nil)
			h.ack(h.next())

			h.session(session.Suspended, 1, 1)
			h.none() // kept through the grace
			reconnects := uint64(1)
			if tt.reconnect {
				reconnects = 2
				h.up(1, 2) // the views are not read again yet
				h.none()
			}
			h.report(1, reconnects, d.Seq, []Partition{ts[0], ts[2]}, tt.vanished, tt.blocked...)
			u := h.next()
			if !eq(u.Assigned, []Partition{ts[0], ts[2]}) || !eq(u.Revoked, ts[1:2]) || !eq(u.Pending, ts[1:2]) {
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
				h.report(1, 1, d.Seq, d.Want, nil)
				h.none()
			}
		})
	}
}
