package rebalance_test

import "github.com/zkalloc/zkalloc/partitions"

func ps(topic string, ids ...int32) []partitions.Partition {
	out := make([]partitions.Partition, len(ids))
	for i, id := range ids {
		out[i] = partitions.Partition{Topic: topic, ID: id}
	}
	return out
}
