package rebalance

import (
	"cmp"
	"slices"
)

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
		if o != Nobody {
			s.departed = append(s.departed, [2]int32{int32(i), o})
		}
		s.owner[i] = Nobody
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
			if h := s.home[i]; o == Nobody && s.isActive(h) && demand[h] > 0 {
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
		if o != Nobody && held[o] > share[o] {
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
				s.owner[i] = Nobody
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
		if o == Nobody {
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
			h = Nobody
			s.home[i] = h
		}
		if h != Nobody {
			used[h] = true
		}
	}
	for k := range m {
		if s.share[k] > 0 { // every owner is a member with a share, and every such member owns
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
		if h := s.home[i]; h != Nobody {
			s.home[i] = remap[h] // and s.home next.Home
		}
	}
	names := make([]string, m)
	for k, mb := range s.members {
		names[k] = mb.Name
	}
	return Result{Next: next, Moved: s.moved, Members: names}
}
