package zkalloc_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A member of the group "billing" consumes exactly the partitions it is
// given. The example needs a ZooKeeper server at 127.0.0.1:2181, so it is
// compiled but not run by go test.
func Example() {
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:    []string{"127.0.0.1:2181"},
		Group:      "billing",
		Member:     "billing-7f9c", // unique in the group, e.g. host and process
		Partitions: map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7}},
		Strategy:   rebalance.Balanced,
	})
	if err != nil {
		log.Fatal(err) // wraps zkalloc.ErrInvalidConfig and names the field
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		if errors.Is(err, zkalloc.ErrDuplicateMember) {
			log.Fatal("another live process is billing-7f9c")
		}
		log.Fatal(err)
	}
	defer alloc.Close()

	consumers := map[zkalloc.Partition]context.CancelFunc{}
	for u := range alloc.Updates() { // closed once the allocator stops
		for _, p := range u.Revoked {
			consumers[p]() // stop consuming, commit offsets
			delete(consumers, p)
		}
		u.Ack() // the next owners may take the revoked partitions now
		for _, p := range u.Added {
			pctx, stop := context.WithCancel(context.Background())
			consumers[p] = stop
			go consume(pctx, p)
		}
		log.Printf("generation %d: %d members, %d partitions here (%s)",
			u.Generation, len(u.Members), len(u.Assigned), u.Reason)
	}
}

func consume(ctx context.Context, p zkalloc.Partition) { <-ctx.Done() }
