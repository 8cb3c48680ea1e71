package rebalance

// RoundRobin deals the partitions out like cards: the i-th partition, in
// topic and then numeric ID order, goes to the (i mod n)-th member in
// sorted order. It is even (spread at most 1) but moves almost every
// partition when a member joins or leaves. It was zkalloc's default
// before [Balanced], and it is the allocator of kiel, the Python Kafka
// client whose PartitionAllocator zkalloc redesigns: a group that runs
// it keeps it by naming it (see docs/operating.md, "Upgrading a group to
// the new default").
var RoundRobin Strategy = roundRobin{}

type roundRobin struct{}

func (roundRobin) builtin()     {}
func (roundRobin) Name() string { return "round-robin" }

func (roundRobin) Assign(members []string, parts []Partition) (map[string][]Partition, error) {
	out := make(map[string][]Partition, len(members))
	if len(members) == 0 {
		return out, errNoMembers(parts)
	}
	n := len(members)
	for i, m := range members {
		share := make([]Partition, 0, (len(parts)-i+n-1)/n)
		for j := i; j < len(parts); j += n {
			share = append(share, parts[j])
		}
		out[m] = share
	}
	return out, nil
}
