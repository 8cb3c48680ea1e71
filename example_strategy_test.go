package zkalloc_test

import (
	"fmt"
	"log"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/rebalance"
)

// byTopic gives each topic whole to one member, the topics dealt round
// the members in order: for consumers that keep per-topic state. Like
// every strategy it is a pure function of its sorted inputs, so every
// member computes the same assignment.
type byTopic struct{}

// Name changes whenever the assignments would: members that run different
// versions are then told apart (zkalloc.ErrStrategyMismatch).
func (byTopic) Name() string { return "by-topic-v1" }

func (byTopic) Assign(members []string, parts []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	out := make(map[string][]rebalance.Partition, len(members))
	for _, m := range members {
		out[m] = nil // every member is a key, even with nothing
	}
	topic := -1
	for i, p := range parts { // sorted by topic, then ID
		if i == 0 || p.Topic != parts[i-1].Topic {
			topic++
		}
		m := members[topic%len(members)]
		out[m] = append(out[m], p)
	}
	return out, nil
}

// A custom strategy is set in Config.Strategy, the same in every member.
// Every member runs it on the same sorted members and partitions, and
// takes its own share of the answer; here it runs on its own, as
// [rebalance.Compute] runs it for the allocator, which also checks the
// answer (every partition given to exactly one member).
func Example_customStrategy() {
	cfg := zkalloc.Config{
		Servers:  []string{"127.0.0.1:2181"},
		Group:    "billing",
		Member:   "a",
		Strategy: byTopic{},
	}
	members := []string{"a", "b"}
	parts := []zkalloc.Partition{
		{Topic: "orders", ID: 0}, {Topic: "orders", ID: 1}, {Topic: "orders", ID: 2},
		{Topic: "payments", ID: 0}, {Topic: "payments", ID: 1},
		{Topic: "refunds", ID: 0},
	}
	assignment, err := rebalance.Compute(cfg.Strategy, members, parts)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range members {
		fmt.Println(m, assignment[m])
	}
	// Output:
	// a [orders:0 orders:1 orders:2 refunds:0]
	// b [payments:0 payments:1]
}

var _ rebalance.Strategy = byTopic{}
