package rebalance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Sticky assigns parts to members starting from the previous placement
// prev, moving the fewest partitions that give every member exactly its
// share ([Shares], with held counting the partitions of parts each member
// owns in prev). It is a pure, deterministic function of its arguments,
// independent of the order of members and parts, so every member that
// computes it from the same placement and the same views gets the same
// Result.
//
// The partitions that change owner are exactly:
//   - those with no owner: new partitions, and those whose owner is not
//     in members or has weight 0 or is drained (it departed);
//   - from each member holding more than its share, the excess over it.
//
// Nothing else moves: a member at or below its share keeps all it owns,
// so nothing moves between two members that are both within their share,
// and partitions no longer in parts simply go. Every moved partition goes
// to a member below its share, which ends exactly at it.
//
// Which partitions move, and where, is decided in this order, each step
// in partition order ([Compare]) and members in name order:
//  1. A partition with no owner whose home is a member still below its
//     share goes to it.
//  2. Each member above its share gives up, first, partitions whose home
//     is a member still below its share, which go to it (returning
//     members get their own back); then, until it is at its share, its
//     last partitions in [Compare] order, into a pool.
//  3. The partitions with no owner left and the pool fill the members
//     still below their share, most short first: every member short by
//     the most takes one in name order, then every member short by the
//     most of what is left, and so on. A first assignment (prev empty)
//     with equal shares is therefore round-robin over the sorted
//     partitions.
//
// A partition's home is the member it was taken from when that member
// departed or was drained; it is kept until the partition returns to
// that member or leaves parts, and replaced when a later owner departs.
//
// Sticky returns an error wrapping [ErrInvalid] for an invalid or
// duplicate member name, a weight outside 0 to [MaxWeight], a partition
// listed twice, or a malformed prev; and one wrapping [ErrNoMembers] if
// there are partitions and no member with a positive weight that is not
// drained: nobody could take them, so the caller keeps what it has.
//
// Sticky is safe for concurrent use and does not modify its arguments.
// Result.Next.Parts is parts itself when parts is sorted (a copy would
// cost as much as the rest at 100,000 partitions): the caller must not
// modify parts afterwards, as an allocator's views are not.
func Sticky(prev Placement, members []Member, parts []Partition) (Result, error) {
	ms, err := sortedMembers(members)
	if err != nil {
		return Result{}, err
	}
	parts, err = sortedParts(parts)
	if err != nil {
		return Result{}, err
	}
	if err := prev.validate(); err != nil {
		return Result{}, err
	}
	s := stickyRun{members: ms, parts: parts}
	s.names(prev)
	if err := s.merge(prev); err != nil {
		return Result{}, err
	}
	if err := s.place(); err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

// sortedParts returns parts if it is sorted by Compare, a sorted copy if
// not, or an error if a partition is listed twice.
func sortedParts(parts []Partition) ([]Partition, error) {
	for i := 1; i < len(parts); i++ {
		if c := comparePart(parts[i-1], parts[i]); c == 0 {
			return nil, fmt.Errorf("%w partition %s: listed twice", ErrInvalid, parts[i])
		} else if c > 0 {
			parts = slices.Clone(parts)
			Sort(parts)
			for i := 1; i < len(parts); i++ {
				if parts[i-1] == parts[i] {
					return nil, fmt.Errorf("%w partition %s: listed twice", ErrInvalid, parts[i])
				}
			}
			return parts, nil
		}
	}
	return parts, nil
}

// comparePart is [Compare] made faster for neighbours in a sorted list,
// which mostly share their topic.
func comparePart(a, b Partition) int {
	if a.Topic == b.Topic {
		return cmp.Compare(a.ID, b.ID)
	}
	return strings.Compare(a.Topic, b.Topic)
}

// stickyRun holds one computation of Sticky. Members are referred to by
// an index into all: the members, sorted, then the names of the previous
// placement that are not members.
type stickyRun struct {
	members []Member
	parts   []Partition
	all     []string
	prevTo  []int32 // prev.Names[j] is all[prevTo[j]]
	// owner[i] is the index in all of parts[i]'s previous owner, or Nobody;
	// then, once placed, the index in members of its new owner; and last
	// the index in Next.Names of it.
	owner []int32
	// home[i] is the index in all of parts[i]'s previous home, or Nobody;
	// then of its next home; and last the index in Next.Names of it.
	home     []int32
	departed [][2]int32 // partitions whose owner departed or was drained: index, owner
	share    []int
	moved    int
}

// isActive reports whether all[k] is a member that takes a share.
func (s *stickyRun) isActive(k int32) bool {
	return k >= 0 && int(k) < len(s.members) && s.members[k].active()
}

func (s *stickyRun) names(prev Placement) {
	m := len(s.members)
	s.all = make([]string, m, m+len(prev.Names))
	idx := make(map[string]int32, m)
	for i, mb := range s.members {
		s.all[i] = mb.Name
		idx[mb.Name] = int32(i)
	}
	s.prevTo = make([]int32, len(prev.Names))
	for j, n := range prev.Names {
		k, ok := idx[n]
		if !ok {
			k = int32(len(s.all))
			s.all = append(s.all, n)
		}
		s.prevTo[j] = k
	}
}

// merge finds each partition's previous owner and home, walking parts
// and prev.Parts together: both are sorted. It also checks that
// prev.Parts is sorted and distinct, comparing only the partitions that
// are no longer in parts: a partition of prev also in parts lies between
// its neighbours already (parts is sorted, and the skipped ones are
// compared).
func (s *stickyRun) merge(prev Placement) error {
	n := len(s.parts)
	s.owner = make([]int32, n)
	s.home = make([]int32, n)
	pp := prev.Parts
	j := 0
	skip := func() error {
		if j > 0 && comparePart(pp[j-1], pp[j]) >= 0 {
			return fmt.Errorf("%w placement: partitions not sorted and distinct at %s", ErrInvalid, pp[j])
		}
		j++
		return nil
	}
	for i, p := range s.parts {
		for j < len(pp) && pp[j] != p && comparePart(pp[j], p) < 0 {
			if err := skip(); err != nil {
				return err
			}
		}
		if j < len(pp) && pp[j] == p {
			s.owner[i], s.home[i] = s.mapPrev(prev.Owner[j]), Nobody
			if prev.Home != nil {
				s.home[i] = s.mapPrev(prev.Home[j])
			}
			j++
		} else {
			s.owner[i], s.home[i] = Nobody, Nobody
		}
	}
	for j < len(pp) {
		if err := skip(); err != nil {
			return err
		}
	}
	return nil
}

func (s *stickyRun) mapPrev(k int32) int32 {
	if k == Nobody {
		return Nobody
	}
	return s.prevTo[k]
}
