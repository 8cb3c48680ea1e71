package rebalance

import "github.com/zkalloc/zkalloc/partitions"

// Partition is [partitions.Partition], named here for brevity.
type Partition = partitions.Partition

// Update is one snapshot of this member's assignment, as its consumer
// receives it. It is a value: nothing in it changes after it is published,
// and its slices must not be modified.
type Update struct {
	// Generation identifies the view the assignment was computed from: the
	// zxid of the newest change it contains. Members that computed from the
	// same view report the same generation.
	Generation int64
	// Members of the group, sorted.
	Members []string
	// Assigned is every partition this member owns now, sorted by
	// [partitions.Compare].
	Assigned []partitions.Partition
	// Added and Revoked are the partitions that Assigned gained and lost
	// since the previous Update the consumer received, sorted. Skipped
	// (conflated) updates lose nothing: their changes are folded in.
	Added   []partitions.Partition
	Revoked []partitions.Partition
	// Reason says why this update was published, for logs.
	Reason string
}

// diff returns what next adds to and removes from prev; both sorted and
// distinct.
func diff(prev, next []partitions.Partition) (added, removed []partitions.Partition) {
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		switch {
		case j == len(next):
			removed = append(removed, prev[i])
			i++
		case i == len(prev):
			added = append(added, next[j])
			j++
		default:
			switch c := partitions.Compare(prev[i], next[j]); {
			case c < 0:
				removed = append(removed, prev[i])
				i++
			case c > 0:
				added = append(added, next[j])
				j++
			default:
				i, j = i+1, j+1
			}
		}
	}
	return added, removed
}
