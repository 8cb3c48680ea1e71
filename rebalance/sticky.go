package rebalance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Result is what [Sticky] returns: the next placement, which holds the
// new owner of every partition, and the members it was computed for.
// [Result.Of] gives one member its partitions; [Result.Assigned] gives
// every member's. A Result is immutable and safe for concurrent use.
type Result struct {
	// Next is the Placement to pass to the next call. Next.Owner is the
	// assignment: every partition's owner.
	Next Placement
	// Moved counts the partitions that changed owner, or had none: the
	// minimum (see [Sticky]).
	Moved int
	// Members lists every member given to Sticky, sorted by name, drained
	// and weight-0 ones included.
	Members []string
}

// Of returns member's partitions, sorted by [Compare]: a new slice, empty
// if member has none or is not a member. A member needs only its own, so
// Of costs one pass over the owners and allocates only the member's share.
func (r Result) Of(member string) []Partition {
	k, ok := slices.BinarySearch(r.Next.Names, member)
	if !ok {
		return []Partition{}
	}
	n := 0
	for _, o := range r.Next.Owner {
		if o == int32(k) {
			n++
		}
	}
	out := make([]Partition, 0, n)
	for i, o := range r.Next.Owner {
		if o == int32(k) {
			out = append(out, r.Next.Parts[i])
		}
	}
	return out
}

// Assigned maps every member of r.Members to its partitions, sorted by
// [Compare] (members with none map to an empty slice). The slices share
// one new backing array, each capped at its own length, so appending to
// one does not overwrite another.
func (r Result) Assigned() map[string][]Partition {
	names := r.Next.Names
	pos := make([]int, len(names)+1)
	for _, o := range r.Next.Owner {
		pos[o+1]++
	}
	for k := range names {
		pos[k+1] += pos[k]
	}
	buf := make([]Partition, len(r.Next.Owner))
	out := make(map[string][]Partition, len(r.Members))
	for _, m := range r.Members {
		out[m] = buf[:0:0]
	}
	for k, m := range names {
		if pos[k+1] > pos[k] {
			out[m] = buf[pos[k]:pos[k+1]:pos[k+1]]
		}
	}
	for i, o := range r.Next.Owner {
		buf[pos[o]] = r.Next.Parts[i]
		pos[o]++
	}
	return out
}

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
//     is therefore round-robin over the sorted partitions.
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
	// owner[i] is the index in all of parts[i]'s previous owner, or None;
	// then, once placed, the index in members of its new owner; and last
	// the index in Next.Names of it.
	owner []int32
	// home[i] is the index in all of parts[i]'s previous home, or None;
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
			s.owner[i], s.home[i] = s.mapPrev(prev.Owner[j]), None
			if prev.Home != nil {
				s.home[i] = s.mapPrev(prev.Home[j])
			}
			j++
		} else {
			s.owner[i], s.home[i] = None, None
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
	if k == None {
		return None
	}
	return s.prevTo[k]
}

// place decides every partition's new owner.
func (s *stickyRun) place() error {
	m := len(s.members)
	held := make([]int, m)
	orphans := 0
	for i, o := range s.owner {
		if s.isActive(o) {
			held[o]++
			continue
		}
		if o != None {
			s.departed = append(s.departed, [2]int32{int32(i), o})
		}
		s.owner[i] = None
		orphans++
	}
	share, err := shares(s.members, len(s.parts), held)
	if err != nil {
		return err
	}
	s.share = share
	demand := make([]int, m) // how many more each member below its share takes
	overs := 0
	for k := range m {
		demand[k] = max(0, share[k]-held[k])
		if held[k] > share[k] {
			overs++
		}
	}
	pooled := orphans
	s.moved = orphans
	// Step 1: partitions with no owner go home if their home is short.
	if orphans > 0 {
		for i, o := range s.owner {
			if h := s.home[i]; o == None && s.isActive(h) && demand[h] > 0 {
				s.owner[i] = h
				demand[h]--
				pooled--
			}
		}
	}
	// Step 2: members above their share give up the excess.
	if overs > 0 {
		pooled += s.release(held, share, demand)
	}
	// Step 3: fill the members still short, most short first.
	if pooled > 0 {
		s.fill(demand, pooled)
	}
	return nil
}

// release takes each member's excess over its share: partitions whose
// home is short go home, the others into the pool. It returns how many
// went into the pool.
func (s *stickyRun) release(held, share, demand []int) int {
	m := len(s.members)
	// The partitions of each member above its share, in Compare order,
	// laid out one member after the other in one slice.
	start := make([]int, m+1)
	for k := range m {
		start[k+1] = start[k]
		if held[k] > share[k] {
			start[k+1] += held[k]
		}
	}
	list := make([]int32, start[m])
	pos := slices.Clone(start[:m])
	for i, o := range s.owner {
		if o != None && held[o] > share[o] {
			list[pos[o]] = int32(i)
			pos[o]++
		}
	}
	pooled := 0
	for k := range m {
		excess := held[k] - share[k]
		if excess <= 0 {
			continue
		}
		s.moved += excess
		mine := list[start[k]:start[k+1]]
		for _, i := range mine {
			if excess == 0 {
				break
			}
			if h := s.home[i]; s.isActive(h) && demand[h] > 0 {
				s.owner[i] = h
				demand[h]--
				excess--
			}
		}
		for x := len(mine) - 1; excess > 0; x-- {
			if i := mine[x]; s.owner[i] == int32(k) {
				s.owner[i] = None
				excess--
				pooled++
			}
		}
	}
	return pooled
}

// fill gives the pooled partitions, in Compare order, to the members
// still short: at each step the member short by the most, the first name
// among equals. It does so by levels rather than with a heap: while the
// set of members short by at least L does not change, they take one each
// in name order, level after level.
func (s *stickyRun) fill(demand []int, pooled int) {
	var short []int32
	for k, d := range demand {
		if d > 0 {
			short = append(short, int32(k))
		}
	}
	slices.SortStableFunc(short, func(a, b int32) int { return cmp.Compare(demand[b], demand[a]) })
	seq := make([]int32, 0, pooled)
	var level []int32 // members short by at least the current level, in name order
	for next := 0; next < len(short); {
		top := demand[short[next]]
		for next < len(short) && demand[short[next]] == top {
			level = append(level, short[next])
			next++
		}
		slices.Sort(level)
		below := 0
		if next < len(short) {
			below = demand[short[next]]
		}
		for range top - below {
			seq = append(seq, level...)
		}
	}
	x := 0
	for i, o := range s.owner {
		if o == None {
			s.owner[i] = seq[x]
			x++
		}
	}
}

// result builds the Result: the assignment and the next placement.
func (s *stickyRun) result() Result {
	m := len(s.members)
	// Next homes, on indices into all, and the names they refer to.
	used := make([]bool, len(s.all))
	for _, d := range s.departed {
		s.home[d[0]] = d[1] // its owner departed or was drained: that is its home now
	}
	for i, h := range s.home {
		if h == s.owner[i] {
			h = None
			s.home[i] = h
		}
		if h != None {
			used[h] = true
		}
	}
	for k := range m {
		if s.share[k] > 0 {
			used[k] = true
		}
	}
	var refs []int32
	for k, u := range used {
		if u {
			refs = append(refs, int32(k))
		}
	}
	slices.SortFunc(refs, func(a, b int32) int { return cmp.Compare(s.all[a], s.all[b]) })
	remap := make([]int32, len(s.all))
	next := Placement{Names: make([]string, len(refs)), Parts: s.parts, Owner: s.owner, Home: s.home}
	for x, k := range refs {
		next.Names[x] = s.all[k]
		remap[k] = int32(x)
	}
	for i, o := range s.owner {
		s.owner[i] = remap[o] // s.owner becomes next.Owner
		if h := s.home[i]; h != None {
			s.home[i] = remap[h] // and s.home next.Home
		}
	}
	names := make([]string, m)
	for k, mb := range s.members {
		names[k] = mb.Name
	}
	return Result{Next: next, Moved: s.moved, Members: names}
}
