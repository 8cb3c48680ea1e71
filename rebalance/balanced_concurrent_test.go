package rebalance_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// TestBalancedConcurrent runs Balanced from several goroutines at once on
// inputs of different sizes, so that the scratch memory its calls share
// through a pool passes between large and small inputs, and checks every
// result against one computed alone. Run with -race.
func TestBalancedConcurrent(t *testing.T) {
	t.Parallel()
	type input struct {
		members []string
		parts   []rebalance.Partition
		want    map[string][]rebalance.Partition
	}
	inputs := []input{
		{members: goldenMembers(21, 10, ""), parts: goldenParts(21, 100, goldenTopics("t", 3), false)},
		{members: goldenMembers(22, 100, ""), parts: goldenParts(22, 10_000, goldenTopics("t", 10), false)},
		{members: goldenMembers(23, 300, ""), parts: goldenParts(23, 299, goldenTopics("t", 3), false)},
		{members: goldenMembers(24, 1000, ""), parts: goldenParts(24, 2000, goldenTopics("t", 10), true)},
		{members: goldenMembers(25, 3, ""), parts: goldenParts(25, 5000, goldenTopics("t", 2), false)},
		{members: goldenMembers(26, 7, ""), parts: nil},
	}
	for i := range inputs {
		want, err := rebalance.Balanced.Assign(inputs[i].members, inputs[i].parts)
		if err != nil {
			t.Fatal(err)
		}
		inputs[i].want = want
	}
	const goroutines, rounds = 4, 3
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds * len(inputs) {
				in := inputs[(g+r)%len(inputs)] // each goroutine in its own order
				got, err := rebalance.Balanced.Assign(in.members, in.parts)
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range in.members {
					if !slices.Equal(got[m], in.want[m]) {
						t.Errorf("%d members, %d partitions: %s got %v, want %v",
							len(in.members), len(in.parts), m, got[m], in.want[m])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
