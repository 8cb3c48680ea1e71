package rebalance_test

import (
	"fmt"

	"github.com/zkalloc/zkalloc/rebalance"
)

func ExampleBalanced() {
	members := []string{"billing-1", "billing-2", "billing-3"}
	var parts []rebalance.Partition
	for id := range int32(8) {
		parts = append(parts, rebalance.Partition{Topic: "events", ID: id})
	}
	got, err := rebalance.Compute(rebalance.Balanced, members, parts)
	if err != nil {
		panic(err)
	}
	for _, m := range members {
		fmt.Println(m, got[m])
	}

	// billing-2 leaves: only its three partitions move.
	after, err := rebalance.Compute(rebalance.Balanced, []string{"billing-1", "billing-3"}, parts)
	if err != nil {
		panic(err)
	}
	fmt.Println("moved", rebalance.Moved(got, after), "minimum", rebalance.MinMoves(got, []string{"billing-1", "billing-3"}))
	// Output:
	// billing-1 [events:1 events:4 events:7]
	// billing-2 [events:2 events:5 events:6]
	// billing-3 [events:0 events:3]
	// moved 3 minimum 3
}
