package rebalance

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Strategy decides which member owns which partition. Every member runs
// the same Strategy on the same inputs and keeps its own share, so Assign
// must be a pure, deterministic function of its arguments: no randomness,
// no clock, no map iteration order, no state kept between calls.
//
// Assign receives the members sorted and distinct and the partitions
// sorted by [Compare] and distinct, and must not modify either.
// It returns every member as a key (an empty or nil slice is fine) and
// every partition under exactly one member. Output that breaks these
// rules, an error or a panic keeps the previous assignment in force and
// is reported; see [Compute].
type Strategy interface {
	// Name identifies the strategy in logs, Update reasons and the
	// member's node, where another member that has waited too long for
	// this one's claims reads it to say whether they disagree on the
	// strategy. A strategy whose assignments change, in a new version for
	// instance, should change its name too, so that members running the
	// old and the new one are told apart.
	Name() string
	Assign(members []string, parts []Partition) (map[string][]Partition, error)
}

// ErrInvalidAssignment is wrapped by [Compute] when a strategy's result
// breaks the rules of [Strategy].
var ErrInvalidAssignment = errors.New("rebalance: invalid assignment")

// ErrStrategy is wrapped by [Compute] when a strategy returns an error or
// panics.
var ErrStrategy = errors.New("rebalance: strategy failed")

// builtin marks the strategies of this package, which are known not to
// modify their inputs, so [Compute] need not copy them.
type builtin interface{ builtin() }

// Compute runs s on members and parts, which must be sorted and distinct,
// and returns its validated result with each member's partitions sorted.
// A panic in s is recovered and returned as an error wrapping
// [ErrStrategy]; a result that gives a partition to no member or to two,
// names an unknown member, leaves out a member or invents a partition is
// an error wrapping [ErrInvalidAssignment]. Inputs handed to a strategy
// that is not one of this package's are copies, so it cannot corrupt the
// caller's view.
//
// Compute is safe for concurrent use if s is.
func Compute(s Strategy, members []string, parts []Partition) (result map[string][]Partition, err error) {
	if _, ok := s.(builtin); !ok {
		members, parts = slices.Clone(members), slices.Clone(parts)
	}
	name := "strategy"
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, fmt.Errorf("%w: %s panicked: %v", ErrStrategy, name, v)
		}
	}()
	name = s.Name()
	got, err := s.Assign(members, parts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrStrategy, name, err)
	}
	if err := validate(members, parts, got); err != nil {
		return nil, fmt.Errorf("%w from %s: %w", ErrInvalidAssignment, name, err)
	}
	for m, ps := range got {
		if !slices.IsSortedFunc(ps, Compare) {
			ps = slices.Clone(ps)
			Sort(ps)
			got[m] = ps
		}
	}
	return got, nil
}

// validate checks that assignment holds exactly the given members and
// gives each of parts to exactly one of them. It runs in
// O(P log(P/T)) without hashing partitions, which matters at a million
// partitions.
func validate(members []string, parts []Partition, assignment map[string][]Partition) error {
	for m := range assignment {
		if _, found := slices.BinarySearch(members, m); !found {
			return fmt.Errorf("unknown member %q", m)
		}
	}
	if len(assignment) != len(members) {
		for _, m := range members {
			if _, ok := assignment[m]; !ok {
				return fmt.Errorf("member %q left out", m)
			}
		}
	}
	idx := newIndex(parts)
	owner := make([]int32, len(parts)) // index into members, plus one; 0 means unowned
	for mi, m := range members {
		for _, p := range assignment[m] {
			i, ok := idx.find(p)
			if !ok {
				return fmt.Errorf("member %q got unknown partition %s", m, p)
			}
			switch prev := owner[i]; {
			case prev == int32(mi+1):
				return fmt.Errorf("partition %s given to %q twice", p, m)
			case prev != 0:
				return fmt.Errorf("partition %s given to both %q and %q", p, members[prev-1], m)
			}
			owner[i] = int32(mi + 1)
		}
	}
	for i, o := range owner {
		if o == 0 {
			return fmt.Errorf("partition %s given to no member", parts[i])
		}
	}
	return nil
}

// index finds a partition's position in a sorted partition list. A
// strategy's shares are usually sorted, so most lookups repeat the topic of
// the one before, and most topics hold consecutive IDs, whose positions
// are computed rather than searched: validating a million partitions
// takes tens of milliseconds, not hundreds.
type index struct {
	parts  []Partition
	topics []string // distinct topics, sorted
	starts []int    // starts[i]: position of topics[i]'s first partition; one extra entry at the end
	dense  []bool   // dense[i]: topics[i]'s IDs are consecutive
	last   int      // the topic of the previous lookup
}

func newIndex(parts []Partition) *index {
	ix := &index{parts: parts}
	for i, p := range parts {
		if i == 0 || p.Topic != parts[i-1].Topic {
			ix.topics = append(ix.topics, p.Topic)
			ix.starts = append(ix.starts, i)
		}
	}
	ix.starts = append(ix.starts, len(parts))
	ix.dense = make([]bool, len(ix.topics))
	for t := range ix.topics {
		lo, hi := ix.starts[t], ix.starts[t+1]
		ix.dense[t] = int(parts[hi-1].ID)-int(parts[lo].ID) == hi-1-lo
	}
	return ix
}

func (ix *index) find(p Partition) (int, bool) {
	t := ix.last
	if t >= len(ix.topics) || ix.topics[t] != p.Topic {
		var found bool
		if t, found = slices.BinarySearch(ix.topics, p.Topic); !found {
			return 0, false
		}
		ix.last = t
	}
	lo, hi := ix.starts[t], ix.starts[t+1]
	if ix.dense[t] {
		i := lo + int(p.ID) - int(ix.parts[lo].ID)
		return i, lo <= i && i < hi
	}
	i := lo + sort.Search(hi-lo, func(k int) bool { return ix.parts[lo+k].ID >= p.ID })
	return i, i < hi && ix.parts[i].ID == p.ID
}
