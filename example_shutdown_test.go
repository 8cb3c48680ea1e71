package zkalloc_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/zkalloc/zkalloc"
)

// Shutting down without losing or doubling work: Close is called from
// another goroutine while the loop still reads Updates. Close publishes a
// final Update that revokes everything; the loop stops those workers,
// waits until every one has stopped (and committed its offsets), and only
// then acks, which lets the other members take the partitions. Close
// returns once the ack is in and the session is closed. The example needs
// a ZooKeeper server, so it is compiled but not run by go test.
//
// Mistakes this avoids: acking before the workers have stopped (two
// consumers run a partition at once); stopping reading Updates before
// Close returns (Close then waits twice ReleaseTimeout for an ack
// that never comes); and stopping the workers one after the other when
// each takes a while (stop them together, and keep the total well under
// ReleaseTimeout, after which the partitions move anyway).
func ExampleAllocator_Close() {
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:    []string{"127.0.0.1:2181"},
		Group:      "billing",
		Member:     "billing-7f9c",
		Partitions: map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7}},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		log.Fatal(err)
	}

	sig, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	go func() {
		<-sig.Done()
		alloc.Close() // the loop below takes the final Update
	}()

	running := map[zkalloc.Partition]*worker{}
	for u := range alloc.Updates() {
		var wg sync.WaitGroup
		for _, p := range u.Revoked {
			w := running[p]
			delete(running, p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.stop() // returns once it has stopped and committed
			}()
		}
		wg.Wait()
		u.Ack() // every revoked partition has stopped
		for _, p := range u.Added {
			running[p] = start(p)
		}
	}
	// Updates is closed once the allocator has stopped, after Close or on
	// a fatal error; either way the final Update revoked everything, so
	// nothing runs any more. Close returns the fatal error, if any (a
	// second Close returns the same).
	if err := alloc.Close(); err != nil {
		log.Fatal(err)
	}
}
