package partitions

import (
	"fmt"
	"maps"
	"slices"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Normalize validates a topic→IDs map (topic names by [rebalance.ValidateTopic],
// no more of them than [MaxTopicsBytes] allows, IDs non-negative) and
// returns a copy with each topic's IDs sorted and distinct, leaving out
// topics with no IDs. The error names the topic.
func Normalize(in map[string][]int32) (map[string][]int32, error) {
	out := make(map[string][]int32, len(in))
	topics := slices.Sorted(maps.Keys(in))
	if n := TopicsBytes(slices.Values(topics)); n > MaxTopicsBytes {
		return nil, fmt.Errorf("%w: %d topics whose names take %d bytes, more than %d", rebalance.ErrInvalid, len(topics), n, MaxTopicsBytes)
	}
	for _, topic := range topics {
		if err := rebalance.ValidateTopic(topic); err != nil {
			return nil, err
		}
		ids, err := NormalizeIDs(in[topic])
		if err != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, err)
		}
		if len(ids) > 0 {
			out[topic] = ids
		}
	}
	return out, nil
}
