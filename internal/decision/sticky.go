package decision

import (
	"slices"

	"github.com/zkalloc/zkalloc/rebalance"
)

// This file is what a job's sticky record is computed from, pure, so
// that the ZooKeeper runner (internal/record) and the in-memory group
// (zkalloctest) compute the same record from the same inputs.

// StickyMembers returns the members j's record is computed for: each of
// j.Members, with its weight in j if it is live, else (a seat, with
// DepartureDelay) the weight prevWeight gives it (the previous record's;
// prevWeight may be nil), else 1; and drained if j.Drained lists it.
// While j.Balanced lists members (a rolling upgrade from balanced),
// every weight is 1 and nobody is drained: the record holds Balanced's
// assignment, the one those members compute.
func (j Job) StickyMembers(prevWeight func(name string) (int, bool)) []rebalance.Member {
	upgrading := len(j.Balanced) > 0
	ms := make([]rebalance.Member, len(j.Members))
	for i, name := range j.Members {
		w := 1
		if _, live := slices.BinarySearch(j.Live, name); live {
			w = j.Weight(name)
		} else if prevWeight != nil {
			if pw, ok := prevWeight(name); ok {
				w = pw
			}
		}
		_, drained := slices.BinarySearch(j.Drained, name)
		if upgrading {
			w, drained = 1, false
		}
		ms[i] = rebalance.Member{Name: name, Weight: w, Drained: drained}
	}
	return ms
}

// StickyNext computes the record that follows prev for j, and returns
// it with the members it was computed for ([Job.StickyMembers]). If
// there is no previous record (havePrev false), or while j.Balanced lists
// members, it starts instead from [FirstPlacement]: [rebalance.Sticky]
// keeps Balanced's assignment as it is with every weight 1. Sticky's
// errors (such as one wrapping [rebalance.ErrNoMembers]) are returned.
func (j Job) StickyNext(prev rebalance.Placement, havePrev bool, prevWeight func(name string) (int, bool)) (rebalance.Result, []rebalance.Member, error) {
	if !havePrev || len(j.Balanced) > 0 {
		prev = FirstPlacement(j)
	}
	members := j.StickyMembers(prevWeight)
	res, err := rebalance.Sticky(prev, members, j.Partitions)
	return res, members, err
}

// FirstPlacement is the placement a first record starts from: the one
// [rebalance.Balanced] gives j's members, so that a group that ran
// Balanced over the same views starts where it is, and moves nothing
// more than the minimum from there. An error (there is no member, say)
// gives the empty placement: Sticky then reports it.
func FirstPlacement(j Job) rebalance.Placement {
	owned, err := rebalance.Balanced.Assign(j.Members, j.Partitions)
	if err != nil {
		return rebalance.Placement{}
	}
	pl, err := rebalance.PlacementFrom(owned)
	if err != nil {
		return rebalance.Placement{}
	}
	return pl
}
