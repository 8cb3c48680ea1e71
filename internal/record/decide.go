package record

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/decision"
)

// action is what [decide] tells the runner to do with the head it read.
type action int

const (
	// match: the head was computed for the job's views; read this
	// member's share from it.
	match action = iota
	// wait: the head is newer than the job's views in at least one of
	// them; this member's views are behind. Wait for the head to change
	// or the job to be cancelled (the shell cancels it with a newer one).
	wait
	// compute: the head is older than the job's views in both (or there
	// is none); compute the next record after the stagger.
	compute
)

func (a action) String() string {
	switch a {
	case match:
		return "match"
	case wait:
		return "wait"
	case compute:
		return "compute"
	}
	return "action(?)"
}

// plan is [decide]'s answer.
type plan struct {
	act action
	// rank is this member's place among the job's live members in the
	// order of who computes first (0 first); set for compute.
	rank int
	// warm: this member holds the head's placement decoded, and
	// computes at once; set for compute.
	warm bool
	// delay is how long to wait before computing, one step per rank
	// (after the warm member's, over a head), returning early if the
	// head changes meanwhile; set for compute.
	delay time.Duration
}

// decide says what a member named me does with the head it read (nil if
// there is none, or none it can decode) for job, the stagger being step
// per rank; warm says whether me holds the placement of that head
// decoded (it wrote it, or computed over it). It is pure: the runner
// reads, decide decides, the runner acts.
//
// The rule is issue 27's: a member acts only on a record whose views'
// zxids are its own; a member whose views are older (the head is newer
// in either zxid) waits; a member whose views are newer (the head older
// in both, or absent) computes the next record.
//
// So that not every member computes at once, they compute one step
// apart, in an order that changes with the views ([rank]): in the usual
// case the first writes and the others find its head computed for their
// views before their turn; if it is slow or dead, the next one writes a
// step later. Ahead of them all, at once, goes the member that holds the
// head's placement decoded, in practice the one that wrote it: it has
// nothing to read and decode, where any other would read every share
// (1,000 requests at 1,000 members), so while it lives one member goes
// on writing the record. Over a head, the ranks start at one step for
// that reason; over none, nobody is warm and they start at zero.
func decide(head *assignment.Head, job decision.Job, me string, step time.Duration, warm bool) plan {
	if head != nil {
		switch {
		case head.MembersZxid == job.MembersZxid && head.PartitionsZxid == job.PartitionsZxid:
			return plan{act: match}
		case head.MembersZxid > job.MembersZxid || head.PartitionsZxid > job.PartitionsZxid:
			return plan{act: wait}
		}
		if warm {
			return plan{act: compute, warm: true}
		}
	}
	r := rank(job.Live, me, job.MembersZxid, job.PartitionsZxid)
	slot := r
	if head != nil {
		slot++
	}
	return plan{act: compute, rank: r, delay: time.Duration(slot) * step}
}

// rank is me's place among live (the job's live members) in the order in
// which they compute a record for the views of zxids mz and pz: by an
// FNV-64a hash of each name with the two zxids, ties by name. The order
// changes with the views, so that the first to compute is not always the
// same member. A member not in live ranks last, at len(live).
func rank(live []string, me string, mz, pz int64) int {
	if !slices.Contains(live, me) {
		return len(live)
	}
	type ranked struct {
		key  uint64
		name string
	}
	rs := make([]ranked, len(live))
	for i, name := range live {
		rs[i] = ranked{rankKey(name, mz, pz), name}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return slices.IndexFunc(rs, func(r ranked) bool { return r.name == me })
}

// rankKey hashes a member's name with the views' zxids.
func rankKey(name string, mz, pz int64) uint64 {
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i] = byte(uint64(mz) >> (8 * i))
		b[8+i] = byte(uint64(pz) >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(name))
	return h.Sum64()
}
