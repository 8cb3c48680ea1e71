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

// Shutting down without losing or doubling work, within the time the
// orchestrator gives between SIGTERM and SIGKILL: Shutdown is called from
// another goroutine while the loop still reads Updates. It publishes a
// final Update that revokes everything (Cause RevokeShutdown); the loop
// stops those workers, waits until every one has stopped (and committed
// its offsets), and only then acks, which lets the other members take the
// partitions. Shutdown returns once the ack is in and the session is
// closed, or, if its ctx ends first, closes the session then (the
// partitions move while the workers may still run) and returns ctx's
// error. Close after the loop returns the same result, or the error that
// stopped the allocator. The example needs a ZooKeeper server, so it is
// compiled but not run by go test.
//
// Mistakes this avoids: acking before the workers have stopped (two
// consumers run a partition at once); stopping reading Updates before
// Shutdown returns (it then waits until its ctx ends for an ack that
// never comes); a ctx longer than the grace period (the process is
// killed before the session is closed, and the others wait a session
// timeout for its claims); and stopping the workers one after the other
// when each takes a while (stop them together).
func ExampleAllocator_Shutdown() {
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
		// Docker kills 10 s after SIGTERM by default, Kubernetes 30 s:
		// leave time for the rest of the process's shutdown.
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		_ = alloc.Shutdown(ctx) // the loop below takes the final Update; Close returns the same error
	}()

	running := map[zkalloc.Partition]*worker{}
	for u := range alloc.Updates() {
		if u.Cause == zkalloc.RevokeLost {
			// The session was lost: another member may own these already.
			// Stop at once; a sink that checks fencing tokens refuses
			// what is late.
			log.Printf("lost %v", u.Revoked)
		}
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
	// Updates is closed once the allocator has stopped, after Shutdown or
	// on a fatal error. The final Update revoked everything, unless
	// Shutdown's ctx ended before the loop took it: stop whatever still
	// runs. Close returns Shutdown's result (nil if the consumer acked in
	// time) or the fatal error.
	for _, w := range running {
		w.stop()
	}
	if err := alloc.Close(); err != nil {
		log.Printf("zkalloc: %v", err)
	}
}
