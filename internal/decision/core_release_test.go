package decision

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// errorLog returns the first ERROR record whose message contains part.
func (h *core) errorLog(part string) (Log, bool) {
	i := slices.IndexFunc(h.logs, func(l Log) bool { return l.Level == slog.LevelError && strings.Contains(l.Msg, part) })
	if i < 0 {
		return Log{}, false
	}
	return h.logs[i], true
}

// arg returns the value of a log record's attribute key.
func (l Log) arg(key string) any {
	for i := 0; i+1 < len(l.Args); i += 2 {
		if l.Args[i] == key {
			return l.Args[i+1]
		}
	}
	return nil
}

// revokeOne brings member a to t:0 and t:1, acked, then has b join so
// that t:1 is revoked, and returns when that revocation was published
// (not delivered).
func revokeOne(t *testing.T, rt time.Duration) *core {
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
	h.ack(h.settled([]string{"a"}, 2))
	h.advance(time.Second)
	h.members(view(1, 1, 4, "a", "b"))
	if u := h.current(); !eq(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("after b joined: %+v, want t:1 revoked", u)
	}
	return h
}

// ReleaseTimeout counts from when the consumer receives the Update that
// revokes a partition, not from its publication: a consumer busy for
// longer than ReleaseTimeout before it reads the next Update still gets
// the whole ReleaseTimeout to stop what it revokes. Before, the partition
// was released ReleaseTimeout after publication, before the consumer had
// seen the revocation.
func TestHandoffReleaseTimeoutStartsAtDelivery(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := revokeOne(t, rt)
	if want := h.now.Add(undeliveredFactor * rt); !h.wake.Equal(want) {
		t.Fatalf("wake at %v before delivery, want the undelivered bound at %v", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(rt + rt/2) // the consumer is busy
	h.noDesired("ReleaseTimeout after publication: the consumer has not received the revocation")
	u := h.next()
	if !eq(u.Revoked, actortest.Parts("t", 1)) {
		t.Fatalf("delivered %+v, want t:1 revoked", u)
	}
	if want := h.now.Add(rt); !h.wake.Equal(want) {
		t.Fatalf("wake at %v after delivery, want ReleaseTimeout after it, %v", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(rt - time.Nanosecond)
	h.noDesired("before ReleaseTimeout after delivery")
	if _, ok := h.errorLog("ReleaseTimeout"); ok {
		t.Fatal("a forced release logged before it happened")
	}
	h.advance(time.Nanosecond)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want %v ReleaseTimeout after delivery, want [t:0]", d.Partitions)
	}
	l, ok := h.errorLog("did not ack")
	if !ok {
		t.Fatalf("logs %v, want the forced release logged at ERROR", h.logs)
	}
	if l.arg("partitions") != "t:1" || l.arg("bound") != "ReleaseTimeout after the consumer received the revocation" || l.arg("after") != rt {
		t.Errorf("log %+v, want it to name t:1, the bound and how long", l)
	}
}

// A revocation the consumer never receives is released after a longer
// bound, undeliveredFactor × ReleaseTimeout after its publication, so
// that a consumer that stopped reading cannot stall the group for ever.
func TestHandoffUndeliveredRevocationBound(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := revokeOne(t, rt)
	h.advance(undeliveredFactor*rt - time.Nanosecond)
	h.noDesired("before the undelivered bound")
	h.advance(time.Nanosecond)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want %v at the undelivered bound, want [t:0]", d.Partitions)
	}
	l, ok := h.errorLog("did not receive")
	if !ok {
		t.Fatalf("logs %v, want the forced release logged at ERROR", h.logs)
	}
	if l.arg("partitions") != "t:1" || l.arg("after") != undeliveredFactor*rt {
		t.Errorf("log %+v, want it to name t:1 and how long", l)
	}
	if got := h.c.Counters(); got.HandoffsStarted != 1 || got.ReleaseTimeouts != 1 {
		t.Errorf("counters %+v, want one hand-off started, released by a timeout", got)
	}
	// Received after all: it is no longer in use, and nothing is due.
	h.next()
	h.noDesired("on a late delivery")
	if !h.wake.IsZero() {
		t.Errorf("wake at %v, want nothing due", h.wake.Sub(t0))
	}
}

// An Update received late still gets ReleaseTimeout after it is received,
// even past the undelivered bound's start: the longest a revoked partition
// can be kept is undeliveredFactor × ReleaseTimeout + ReleaseTimeout.
func TestHandoffLateDeliveryGetsAWholeReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := revokeOne(t, rt)
	h.advance(undeliveredFactor*rt - time.Second)
	h.next()
	h.advance(rt - time.Nanosecond)
	h.noDesired("before ReleaseTimeout after a late delivery")
	h.advance(time.Nanosecond)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0)) {
		t.Fatalf("Want %v, want [t:0]", d.Partitions)
	}
}

// A later Update that revokes more restarts nothing for what an earlier
// one, already received, revoked; and a revocation not received keeps the
// time it was first published, however many Updates repeat it.
func TestHandoffReleaseClocksPerPartition(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
	h.ack(h.settled([]string{"a"}, 4))
	h.parts(parts(1, 1, 4, 0, 1, 2)) // t:3 leaves, received at once
	h.next()
	h.advance(rt / 2)
	h.parts(parts(1, 1, 5, 0, 1)) // t:2 leaves, not received
	h.advance(rt / 2)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("Want %v, want t:3 released ReleaseTimeout after it was received", d.Partitions)
	}
	h.parts(parts(1, 1, 6, 0, 1, 7)) // t:7 comes, t:2 still revoked, not received
	d := h.nextDesired()
	if !eq(d.Partitions, actortest.Parts("t", 0, 1, 2, 7)) {
		t.Fatalf("Want %v, want t:7 too", d.Partitions)
	}
	h.grant(d, d.Partitions...)
	h.advance(undeliveredFactor*rt - rt/2 - time.Nanosecond)
	h.noDesired("before the undelivered bound of t:2, from its first publication")
	h.advance(time.Nanosecond)
	if d := h.nextDesired(); !eq(d.Partitions, actortest.Parts("t", 0, 1, 7)) {
		t.Fatalf("Want %v, want t:2 released at its undelivered bound", d.Partitions)
	}
}
