package rebalance

import (
	"cmp"
	"slices"
)

// MinMoves returns the fewest partitions that must change owner to go from
// the assignment prev to any assignment of the same partitions over
// members in which every member holds floor(P/M) or ceil(P/M) of the P
// partitions (a spread of at most one, as [Balanced] gives). Members of
// prev that are not in members are leaving; members not in prev are
// joining.
//
// A member can keep at most min(c, q) of its c partitions if its new share
// is q, and the P mod M shares of ceil(P/M) are best given to the members
// that hold the most, so the minimum is P minus the sum of min(c, q) over
// members sorted by c, largest first, with the ceil shares first. When one
// member leaves a balanced assignment this is exactly the leaver's count;
// when one joins, it is at least floor(P/(M+1)), all taken by the joiner.
//
// MinMoves is safe for concurrent use; it does not modify its arguments.
func MinMoves(prev map[string][]Partition, members []string) int {
	total := 0
	for _, ps := range prev {
		total += len(ps)
	}
	if len(members) == 0 || total == 0 {
		return 0
	}
	have := make([]int, len(members))
	for i, m := range members {
		have[i] = len(prev[m])
	}
	slices.SortFunc(have, func(a, b int) int { return cmp.Compare(b, a) })
	floor, extra := total/len(members), total%len(members)
	keep := 0
	for i, c := range have {
		q := floor
		if i < extra {
			q++
		}
		keep += min(c, q)
	}
	return total - keep
}

// Moved returns how many partitions of next have a different owner, or
// none, in prev.
//
// Moved is safe for concurrent use; it does not modify its arguments.
func Moved(prev, next map[string][]Partition) int {
	was := make(map[Partition]string)
	for m, ps := range prev {
		for _, p := range ps {
			was[p] = m
		}
	}
	moved := 0
	for m, ps := range next {
		for _, p := range ps {
			if w, ok := was[p]; !ok || w != m {
				moved++
			}
		}
	}
	return moved
}
