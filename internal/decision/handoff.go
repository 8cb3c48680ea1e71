package decision

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// undeliveredFactor × ReleaseTimeout is how long a revocation the consumer
// has not received is kept, counted from its publication, before its
// claim is released anyway (see handoff).
//
// Why twice: a consumer that keeps to the contract handles each Update
// (stops what it revokes, acks, starts what it adds) within
// ReleaseTimeout, and reads the next one when it is done, so it receives
// any revocation within ReleaseTimeout of its publication. Twice that
// leaves it as much again for a slow moment, while a consumer that has
// stopped reading (stuck, or its loop gone) stalls the group's hand-off
// for a bounded time: the longest a revoked partition is kept is
// (undeliveredFactor + 1) × ReleaseTimeout, received just before this
// bound and then never acked. A bound of its own in the Config would let
// the two be tuned apart; nobody has needed that yet.
const undeliveredFactor = 2

// LongestHandoff is the longest a hand-off between members that agree on
// the assignment can take, with the holder's Settle and ReleaseTimeout
// and the session timeout its server granted (not the one asked for: the
// server bounds it): the holder debounces (a burst is cut short at
// settleFactor × Settle), then its consumer receives the revocation and
// acks (the holder gives up waiting at most undeliveredFactor ×
// ReleaseTimeout + ReleaseTimeout after its publication: see handoff),
// or its session expires. A wanted claim held longer by another session
// means the members disagree; the claims actor warns of it.
func LongestHandoff(settle, releaseTimeout, granted time.Duration) time.Duration {
	return settleFactor*settle + (undeliveredFactor+1)*releaseTimeout + granted
}

// bound names the limit that released a revoked partition without an ack.
type bound int

const (
	afterDelivery bound = iota // ReleaseTimeout after the consumer received the revocation
	undelivered                // undeliveredFactor × ReleaseTimeout after its publication, never received
)

func (b bound) String() string {
	if b == undelivered {
		return fmt.Sprintf("%d × ReleaseTimeout after its publication, never received", undeliveredFactor)
	}
	return "ReleaseTimeout after the consumer received the revocation"
}

// handoff is the pure core of the hand-off: it knows what the consumer may
// still be working on, and from that which claims must be kept. The rules:
//
//   - Assigned is target ∩ held: a partition is listed only once this
//     member holds its claim, so two members never list it at once.
//   - A partition the consumer received is in use until the consumer acks
//     an Update received after the last one that assigned it: the consumer
//     acks only after stopping what that Update revoked.
//   - A claim is kept while its partition is targeted or in use, but a
//     revoked partition is given up without an ack, so that a stuck
//     consumer cannot stall the group: ReleaseTimeout after the consumer
//     received an Update without it, or, if it has received none,
//     undeliveredFactor × ReleaseTimeout after the first Update without it
//     was published. A consumer busy before it reads the next Update so
//     still gets ReleaseTimeout to stop what it revokes.
type handoff struct {
	releaseTimeout time.Duration

	// The seq and Assigned of the last delivered Update: every partition
	// in it is in use. A partition that was delivered before but is not in
	// it is in use while the seq of the last Update that may have assigned
	// it is at least the acked one, kept in gone (partitions that leave the
	// set are few, so a change costs a merge of two sorted lists, not a map
	// write per assigned partition).
	curSeq uint64
	cur    []rebalance.Partition         // Assigned of the last Update the consumer received, sorted; not modified
	gone   map[rebalance.Partition]leave // for those not in cur
	acked  uint64                        // the highest seq the consumer acked

	// The revocations published and not received: cur less the newest
	// published Assigned (pub), with when each was first published.
	pub      []rebalance.Partition // Assigned of the newest published Update, sorted; not modified
	pubAt    time.Time             // when it was published
	unsent   []rebalance.Partition // cur \ pub, sorted
	unsentAt []time.Time           // unsentAt[i]: since when unsent[i] has been revoked in every Update published

	revoking map[rebalance.Partition]struct{} // held, in use, no longer assigned, not yet released: a hand-off under way
	forced   map[rebalance.Partition]bool     // released without an ack, not yet gone from held

	// Hand-offs counted (Counters): entered revoking, left it released,
	// and of those released without an ack.
	started, done, timeouts uint64
}

// leave is a partition the consumer received in an Update and then one
// without it.
type leave struct {
	last uint64    // the seq of the last Update that may have assigned it
	at   time.Time // when the consumer received the first Update without it
}

// forcedRelease is a revoked partition released without an ack.
type forcedRelease struct {
	p     rebalance.Partition
	bound bound
	after time.Duration // since the bound's start: the delivery, or the publication
}

func newHandoff(releaseTimeout time.Duration) *handoff {
	return &handoff{
		releaseTimeout: releaseTimeout,
		gone:           make(map[rebalance.Partition]leave),
		revoking:       make(map[rebalance.Partition]struct{}),
		forced:         make(map[rebalance.Partition]bool),
	}
}

// published records that an Update assigning the sorted list assigned
// (kept, not copied) was published at now.
func (h *handoff) published(assigned []rebalance.Partition, now time.Time) {
	h.pub, h.pubAt = assigned, now
	h.restamp(now)
}

// restamp brings unsent up to date with cur and pub: a revocation keeps
// the time it was first published, a new one is stamped now.
func (h *handoff) restamp(now time.Time) {
	unsent := minus(h.cur, h.pub)
	if len(unsent) == 0 && len(h.unsent) == 0 {
		return
	}
	at := make([]time.Time, len(unsent))
	i := 0 // both lists are sorted: walk them together
	for j, p := range unsent {
		for i < len(h.unsent) && rebalance.Compare(h.unsent[i], p) < 0 {
			i++
		}
		if i < len(h.unsent) && rebalance.Compare(h.unsent[i], p) == 0 {
			at[j] = h.unsentAt[i]
		} else {
			at[j] = now
		}
	}
	h.unsent, h.unsentAt = unsent, at
}

// delivered records that the consumer received Update seq, which assigned
// the sorted list assigned (kept, not copied: Updates are not modified),
// at now. It reports whether a partition left the consumer's hands: it
// is no longer in use if the consumer acked the Update from Current before
// it received it, and its release is due at another time if not.
func (h *handoff) delivered(seq uint64, assigned []rebalance.Partition, now time.Time) (revoked bool) {
	added, removed := diff(h.cur, assigned)
	for _, p := range removed {
		// Not h.curSeq: an Update published since, which Current
		// returned, may have assigned it too, and an ack of that one
		// does not cover its revocation.
		h.gone[p] = leave{last: seq - 1, at: now}
	}
	for _, p := range added {
		delete(h.gone, p)
	}
	h.cur, h.curSeq = assigned, seq
	h.restamp(now)
	return len(removed) > 0
}

// ack records that the consumer acked Update seq (and so every earlier
// one). It reports whether anything stopped being in use.
func (h *handoff) ack(seq uint64) bool {
	if seq <= h.acked {
		return false
	}
	h.acked = seq
	freed := false
	for p, l := range h.gone {
		if l.last < seq {
			delete(h.gone, p)
			freed = true
		}
	}
	return freed
}

// inUse reports whether the consumer may still be working on p.
func (h *handoff) inUse(p rebalance.Partition) bool {
	if _, found := slices.BinarySearchFunc(h.cur, p, rebalance.Compare); found {
		return true // until an Update without it is delivered, even if one taken from Current was acked
	}
	l, ok := h.gone[p]
	return ok && l.last >= h.acked
}

// releaseBy returns when p, in use and not assigned by the newest
// published Update, is released without an ack, the bound that says so,
// and when that bound started.
func (h *handoff) releaseBy(p rebalance.Partition) (at time.Time, b bound, from time.Time) {
	if l, ok := h.gone[p]; ok {
		return l.at.Add(h.releaseTimeout), afterDelivery, l.at
	}
	from = h.pubAt // not found: cannot be (p is in cur, not in pub), but bounded anyway
	if i, found := slices.BinarySearchFunc(h.unsent, p, rebalance.Compare); found {
		from = h.unsentAt[i]
	}
	return from.Add(undeliveredFactor * h.releaseTimeout), undelivered, from
}

// want returns the claims to keep or take: the target, plus the held
// partitions still in use whose release bound has not passed. It also
// returns the partitions released without an ack just now, to be logged,
// and when the next release is due (zero if none).
func (h *handoff) want(target, held, assigned []rebalance.Partition, now time.Time) (want []rebalance.Partition, forced []forcedRelease, next time.Time) {
	want = slices.Clone(target)
	for p := range h.revoking {
		if _, found := slices.BinarySearchFunc(held, p, rebalance.Compare); !found {
			delete(h.revoking, p)
			delete(h.forced, p)
			h.done++
		}
	}
	for _, p := range held {
		if _, found := slices.BinarySearchFunc(assigned, p, rebalance.Compare); found {
			delete(h.revoking, p)
			delete(h.forced, p)
			continue
		}
		if _, found := slices.BinarySearchFunc(target, p, rebalance.Compare); found {
			continue // targeted but not assigned: only when not yet delivered, kept anyway
		}
		if !h.inUse(p) {
			continue
		}
		if _, ok := h.revoking[p]; !ok {
			h.revoking[p] = struct{}{}
			h.started++
		}
		deadline, b, from := h.releaseBy(p)
		if !now.Before(deadline) {
			if !h.forced[p] {
				h.forced[p] = true
				h.timeouts++
				forced = append(forced, forcedRelease{p: p, bound: b, after: now.Sub(from)})
			}
			continue
		}
		want = append(want, p)
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	rebalance.Sort(want)
	return want, forced, next
}

// drainBy returns when the last partition the consumer may still be
// working on is released without an ack, as want would release it were
// none assigned, and the bound that says so; zero if none is in use.
func (h *handoff) drainBy() (last time.Time, b bound) {
	check := func(p rebalance.Partition) {
		if at, pb, _ := h.releaseBy(p); at.After(last) {
			last, b = at, pb
		}
	}
	for _, p := range h.cur {
		check(p)
	}
	for p, l := range h.gone {
		if l.last >= h.acked {
			check(p)
		}
	}
	return last, b
}

// minus returns the partitions of sorted a that are not in sorted b.
func minus(a, b []rebalance.Partition) []rebalance.Partition {
	var out []rebalance.Partition
	j := 0
	for _, p := range a {
		for j < len(b) && rebalance.Compare(b[j], p) < 0 {
			j++
		}
		if j == len(b) || rebalance.Compare(b[j], p) != 0 {
			out = append(out, p)
		}
	}
	return out
}

// intersect returns the partitions in both sorted lists.
func intersect(a, b []rebalance.Partition) []rebalance.Partition {
	var out []rebalance.Partition
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := rebalance.Compare(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// idle reports whether the consumer is working on nothing: the last
// Update it received assigned nothing, and every partition it had before
// was acked.
func (h *handoff) idle() bool {
	if len(h.cur) > 0 {
		return false
	}
	for _, l := range h.gone {
		if l.last >= h.acked {
			return false
		}
	}
	return true
}
