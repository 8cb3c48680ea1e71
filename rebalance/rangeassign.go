package rebalance

// Range is Kafka's range assignor: each topic's partitions, in ID order,
// are cut into one contiguous run per member in sorted order, the first
// (count mod members) members taking one extra. Each topic is even, but
// the extras pile up on the first members across topics, and a change of
// members moves most partitions.
var Range Strategy = rangeStrategy{}

type rangeStrategy struct{}

func (rangeStrategy) builtin()     {}
func (rangeStrategy) Name() string { return "range" }

func (rangeStrategy) Assign(members []string, parts []Partition) (map[string][]Partition, error) {
	out := make(map[string][]Partition, len(members))
	if len(members) == 0 {
		return out, errNoMembers(parts)
	}
	for _, m := range members {
		out[m] = nil
	}
	n := len(members)
	for start := 0; start < len(parts); {
		end := start
		for end < len(parts) && parts[end].Topic == parts[start].Topic {
			end++
		}
		count := end - start
		per, extra := count/n, count%n
		at := start
		for i, m := range members {
			take := per
			if i < extra {
				take++
			}
			out[m] = append(out[m], parts[at:at+take]...)
			at += take
		}
		start = end
	}
	return out, nil
}
