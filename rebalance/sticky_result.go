package rebalance

import "slices"

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
