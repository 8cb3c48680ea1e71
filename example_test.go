package zkalloc_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
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
			// Start waited for the name as long as ctx allowed, longer
			// than a crashed earlier run's session lives (10 s).
			log.Fatal("another live process is billing-7f9c: ", err)
		}
		log.Fatal(err)
	}

	// Shut down from another goroutine: Close publishes a final Update
	// revoking everything and waits (at most ReleaseTimeout) for the loop
	// below to stop those partitions and Ack it, so that no other member
	// starts one before this one has stopped it. (Shutdown takes a ctx
	// instead: see its example.)
	sig, stopSig := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSig()
	go func() {
		<-sig.Done()
		alloc.Close()
	}()

	running := map[zkalloc.Partition]*worker{}
	for u := range alloc.Updates() { // closed once the allocator stops
		for _, p := range u.Revoked {
			running[p].stop() // waits until it has stopped and committed
			delete(running, p)
		}
		u.Ack() // only now may the next owners take the revoked partitions
		for _, p := range u.Added {
			running[p] = start(p)
		}
		log.Printf("generation %d: %d members, %d partitions here (%s)",
			u.Generation, len(u.Members), len(u.Assigned), u.Reason)
	}
	if err := alloc.Close(); err != nil { // what stopped it, or an ack that came too late
		log.Fatal(err)
	}
}

// worker consumes one partition.
type worker struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func start(p zkalloc.Partition) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		consume(ctx, p) // returns once ctx ends and its offsets are committed
	}()
	return w
}

// stop stops the worker and waits until it has.
func (w *worker) stop() {
	w.cancel()
	<-w.done
}

func consume(ctx context.Context, p zkalloc.Partition) { <-ctx.Done() }
