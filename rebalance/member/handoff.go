package member

import (
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/partitions"
)

// handoff is the pure core of the hand-off: it knows what the consumer may
// still be working on, and from that which claims must be kept. The rules:
//
//   - Assigned is target ∩ held: a partition is listed only once this
//     member holds its claim, so two members never list it at once.
//   - A partition the consumer received is in use until the consumer acks
//     an Update received after the last one that assigned it: the consumer
//     acks only after stopping what that Update revoked.
//   - A claim is kept while its partition is targeted or in use, but a
//     revoked partition is given up ReleaseTimeout after it was revoked
//     even without an ack, so a stuck consumer cannot stall the group.
type handoff struct {
	releaseTimeout time.Duration

	// The seq and Assigned of the last delivered Update: every partition
	// in it is in use. A partition that was delivered before but is not in
	// it is in use while the seq of the last Update that may have assigned
	// it is at least the acked one, kept in gone (partitions that leave the
	// set are few, so a change costs a merge of two sorted lists, not a map
	// write per assigned partition).
	curSeq    uint64
	cur       []Partition             // Assigned of the last Update the consumer received, sorted; not modified
	gone      map[Partition]uint64    // seq of the last Update that may have assigned the partition, for those not in cur
	acked     uint64                  // the highest seq the consumer acked
	revokedAt map[Partition]time.Time // held, no longer assigned, not yet released
	forced    map[Partition]bool      // released by timeout, not yet gone from held

	// Hand-offs counted (Counters): entered revokedAt, left it released,
	// and of those released by timeout.
	started, done, timeouts uint64
}

func newHandoff(releaseTimeout time.Duration) *handoff {
	return &handoff{
		releaseTimeout: releaseTimeout,
		gone:           make(map[Partition]uint64),
		revokedAt:      make(map[Partition]time.Time),
		forced:         make(map[Partition]bool),
	}
}

// delivered records that the consumer received Update seq, which assigned
// the sorted list assigned (kept, not copied: Updates are not modified).
// It reports whether a partition stopped being in use: the consumer can
// ack an Update it took from Current before it receives it.
func (h *handoff) delivered(seq uint64, assigned []Partition) (freed bool) {
	added, removed := diff(h.cur, assigned)
	for _, p := range removed {
		// Not h.curSeq: an Update published since, which Current
		// returned, may have assigned it too, and an ack of that one
		// does not cover its revocation.
		h.gone[p] = seq - 1
	}
	for _, p := range added {
		delete(h.gone, p)
	}
	h.cur, h.curSeq = assigned, seq
	return len(removed) > 0 && h.acked >= seq
}

// ack records that the consumer acked Update seq (and so every earlier
// one). It reports whether anything stopped being in use.
func (h *handoff) ack(seq uint64) bool {
	if seq <= h.acked {
		return false
	}
	h.acked = seq
	freed := false
	for p, last := range h.gone {
		if last < seq {
			delete(h.gone, p)
			freed = true
		}
	}
	return freed
}

// inUse reports whether the consumer may still be working on p.
func (h *handoff) inUse(p Partition) bool {
	if _, found := slices.BinarySearchFunc(h.cur, p, partitions.Compare); found {
		return true // until an Update without it is delivered, even if one taken from Current was acked
	}
	last, ok := h.gone[p]
	return ok && last >= h.acked
}

// want returns the claims to keep or take: the target, plus the held
// partitions still in use whose release timeout has not passed. It also
// returns the partitions whose timeout passed just now, for a warning, and
// when the next timeout is due (zero if none).
func (h *handoff) want(target, held, assigned []Partition, now time.Time) (want, timedOut []Partition, next time.Time) {
	want = slices.Clone(target)
	for p := range h.revokedAt {
		if _, found := slices.BinarySearchFunc(held, p, partitions.Compare); !found {
			delete(h.revokedAt, p)
			delete(h.forced, p)
			h.done++
		}
	}
	for _, p := range held {
		if _, found := slices.BinarySearchFunc(assigned, p, partitions.Compare); found {
			delete(h.revokedAt, p)
			delete(h.forced, p)
			continue
		}
		if _, found := slices.BinarySearchFunc(target, p, partitions.Compare); found {
			continue // targeted but not assigned: only when not yet delivered, kept anyway
		}
		if !h.inUse(p) {
			continue
		}
		at, ok := h.revokedAt[p]
		if !ok {
			at = now
			h.revokedAt[p] = at
			h.started++
		}
		deadline := at.Add(h.releaseTimeout)
		if !now.Before(deadline) {
			if !h.forced[p] {
				h.forced[p] = true
				h.timeouts++
				timedOut = append(timedOut, p)
			}
			continue
		}
		want = append(want, p)
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	partitions.Sort(want)
	return want, timedOut, next
}

// intersect returns the partitions in both sorted lists.
func intersect(a, b []Partition) []Partition {
	var out []Partition
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := partitions.Compare(a[i], b[j]); {
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
	for _, last := range h.gone {
		if last >= h.acked {
			return false
		}
	}
	return true
}
