package rebalance_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// group returns n members named like consumer IDs and p partitions over
// topics topics, from a fixed seed.
func group(seed uint64, n, p, topics int) ([]string, []rebalance.Partition) {
	r := rand.New(rand.NewPCG(seed, 0))
	members := make([]string, 0, n)
	for len(members) < n {
		members = append(members, fmt.Sprintf("consumer-%016x", r.Uint64()))
	}
	slices.Sort(members)
	members = slices.Compact(members)
	parts := make([]rebalance.Partition, 0, p)
	for t := range topics {
		for id := range p / topics {
			parts = append(parts, rebalance.Partition{Topic: fmt.Sprintf("events-%02d", t), ID: int32(id)})
		}
	}
	rebalance.Sort(parts)
	return members, parts
}

func BenchmarkBalanced(b *testing.B) {
	for _, c := range []struct{ members, parts int }{{10, 100}, {100, 10_000}, {1_000, 100_000}, {1_000, 1_000_000}} {
		b.Run(fmt.Sprintf("%dx%d", c.members, c.parts), func(b *testing.B) {
			members, parts := group(1, c.members, c.parts, 10)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rebalance.Balanced.Assign(members, parts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
