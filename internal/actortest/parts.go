package actortest

import "github.com/zkalloc/zkalloc/rebalance"

// Parts lists the partitions of topic with the given IDs, in that order.
func Parts(topic string, ids ...int32) []rebalance.Partition {
	out := make([]rebalance.Partition, len(ids))
	for i, id := range ids {
		out[i] = rebalance.Partition{Topic: topic, ID: id}
	}
	return out
}

// PartsN lists topic:0 to topic:n-1.
func PartsN(topic string, n int) []rebalance.Partition {
	out := make([]rebalance.Partition, n)
	for i := range out {
		out[i] = rebalance.Partition{Topic: topic, ID: int32(i)}
	}
	return out
}
