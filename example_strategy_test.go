package zkalloc_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/zkalloctest"
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

// A custom strategy is set in Config.Strategy, the same in every member:
//
//	zkalloc.New(zkalloc.Config{..., Strategy: byTopic{}})
//
// Here it runs in a zkalloctest group, in memory.
func Example_customStrategy() {
	g, err := zkalloctest.NewGroup(zkalloctest.Config{
		Partitions: map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1}, "refunds": {0}},
		Strategy:   byTopic{},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var members []*zkalloctest.Member
	for _, name := range []string{"a", "b"} {
		m, err := g.Join(name)
		if err != nil {
			log.Fatal(err)
		}
		go ackAll(m.Updates())
		members = append(members, m)
	}
	if err := g.WaitConverged(ctx); err != nil {
		log.Fatal(err)
	}
	for _, m := range members {
		fmt.Println(m.Name(), m.Current().Assigned)
	}
	// Output:
	// a [orders:0 orders:1 orders:2 refunds:0]
	// b [payments:0 payments:1]
}

func ackAll(updates <-chan zkalloc.Update) {
	for u := range updates {
		u.Ack()
	}
}

var _ rebalance.Strategy = byTopic{}
