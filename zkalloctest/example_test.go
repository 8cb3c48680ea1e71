package zkalloctest_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/zkalloctest"
)

// Processor is the code under test: the user's consumer. It takes its
// Updates from anything that has them, a *zkalloc.Allocator in
// production and a *zkalloctest.Member in tests.
type Processor struct {
	mu      sync.Mutex
	running map[zkalloc.Partition]bool
}

type source interface {
	Updates() <-chan zkalloc.Update
}

// Run consumes src's Updates until the channel is closed.
func (p *Processor) Run(src source) {
	for u := range src.Updates() {
		p.mu.Lock()
		for _, part := range u.Revoked {
			delete(p.running, part) // a real one stops and commits here
		}
		for _, part := range u.Added {
			p.running[part] = true
		}
		p.mu.Unlock()
		u.Ack() // after stopping Revoked: the next owner may start them
	}
}

// Running returns how many partitions p runs.
func (p *Processor) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

// A test of a user's consumer: two members share eight partitions; one
// leaves gracefully, and the other takes over once the first has stopped
// them; then the second loses its session and stops everything.
func Example() {
	g, err := zkalloctest.NewGroup(zkalloctest.Config{
		Partitions: map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	a, err := g.Join("a")
	if err != nil {
		log.Fatal(err)
	}
	pa := &Processor{running: map[zkalloc.Partition]bool{}}
	go pa.Run(a)
	b, err := g.Join("b")
	if err != nil {
		log.Fatal(err)
	}
	pb := &Processor{running: map[zkalloc.Partition]bool{}}
	go pb.Run(b)

	// Converged: every member computed from the same view, and every
	// consumer acked its newest Update.
	if err := g.WaitConverged(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("a runs", pa.Running(), "and b", pb.Running())

	// Close returns once a's processor has acked the final Update, which
	// revoked all it ran; only then does b take over.
	if err := a.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after a closed, a runs", pa.Running())
	if err := g.WaitConverged(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b runs", pb.Running())

	// A lost session revokes everything at once.
	b.LoseSession()
	if err := b.WaitAcked(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b without a session runs", pb.Running(), "and the group has", len(g.Members()), "members")
	// Output:
	// a runs 4 and b 4
	// after a closed, a runs 0
	// b runs 8
	// b without a session runs 0 and the group has 0 members
}
