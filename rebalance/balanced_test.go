package rebalance_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// TestBalancedGolden pins Balanced's output: every member of a group must
// compute the same assignment on any machine and Go version, so a change
// here is a change of strategy, not a refactoring.
func TestBalancedGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		members, parts, topics int
		want                   uint64
	}{
		{3, 8, 1, 0x8fb4d46acac3f94},
		{7, 100, 3, 0x9d90e69a4736d3f2},
		{40, 1000, 10, 0xa0b6af4d3e62f0ec},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d", tt.members, tt.parts), func(t *testing.T) {
			t.Parallel()
			members, ps := group(uint64(tt.members), tt.members, tt.parts, tt.topics)
			got, err := rebalance.Compute(rebalance.Balanced, members, ps)
			if err != nil {
				t.Fatal(err)
			}
			if d := digest(members, got); d != tt.want {
				t.Errorf("digest %#x, want %#x", d, tt.want)
			}
		})
	}
}

// digest hashes an assignment member by member in sorted order.
func digest(members []string, got map[string][]rebalance.Partition) uint64 {
	h := fnv.New64a()
	for _, m := range members {
		fmt.Fprintf(h, "%s=%v;", m, got[m])
	}
	return h.Sum64()
}
