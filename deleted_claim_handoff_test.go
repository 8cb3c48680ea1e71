package zkalloc_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// ledger records which member's consumer works on each partition, as the
// consumers report it, and every moment two of them did at once.
type ledger struct {
	mu         sync.Mutex
	owner      map[zkalloc.Partition]string
	since      map[zkalloc.Partition]time.Time
	violations []string
}

func newLedger() *ledger {
	return &ledger{owner: map[zkalloc.Partition]string{}, since: map[zkalloc.Partition]time.Time{}}
}

// start records that who's consumer begins work on ps.
func (l *ledger) start(who string, ps []zkalloc.Partition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if o, ok := l.owner[p]; ok && o != who {
			l.violations = append(l.violations, fmt.Sprintf("%s started %s while %s still worked on it", who, p, o))
		}
		l.owner[p], l.since[p] = who, time.Now()
	}
}

// stop records that who's consumer has stopped work on ps.
func (l *ledger) stop(who string, ps []zkalloc.Partition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if l.owner[p] == who {
			delete(l.owner, p)
		}
	}
}

func (l *ledger) holder(p zkalloc.Partition) (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner[p], l.since[p]
}

func (l *ledger) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.violations)
}

// ledgerMember is a member whose consumer records its work in a ledger,
// and takes stopFor to stop the partitions an Update revokes. It tells
// stopping when it begins to stop them.
type ledgerMember struct {
	name     string
	alloc    *zkalloc.Allocator
	stopping chan []zkalloc.Partition // the partitions, when a stop begins; one slot, not to block the consumer
	done     chan struct{}
	mu       sync.Mutex
	stopped  time.Time // when the last stop ended
}

func startLedgerMember(t *testing.T, c *cluster, name string, seed map[string][]int32, l *ledger, stopFor time.Duration) *ledgerMember {
	t.Helper()
	alloc, err := zkalloc.New(c.config(name, seed))
	if err != nil {
		t.Fatal(err)
	}
	m := &ledgerMember{name: name, alloc: alloc, stopping: make(chan []zkalloc.Partition, 1), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			if len(u.Revoked) > 0 {
				select {
				case m.stopping <- u.Revoked:
				default:
				}
				<-time.After(stopFor) // the consumer's slow stop: part of the scenario, not a wait of the test
				l.stop(name, u.Revoked)
				m.mu.Lock()
				m.stopped = time.Now()
				m.mu.Unlock()
			}
			u.Ack()
			l.start(name, u.Added)
		}
	}()
	t.Cleanup(func() { alloc.Close(); <-m.done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return m
}

// The reproduction of issue 24's first item, through the public API: a
// owns t:0..7 and its consumer takes 3 s to stop revoked partitions; b
// joins, and a partition moving to b is in b's Pending; then someone
// deletes that partition's claim. b must not list it while a's consumer
// still works on it; once a's consumer has stopped and acked, b gets it.
// (Before, b listed it about 60 ms after the delete, and a's consumer
// went on working on it for 3 s more: two owners.)
func TestDeletedClaimDuringHandOffGivesNoTwoOwners(t *testing.T) {
	t.Parallel()
	srv := server(t)
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(8)}
	l := newLedger()
	const stopFor = 3 * time.Second
	a := startLedgerMember(t, c, "a", seed, l, stopFor)
	waitFor(t, testTimeout, func() string {
		if u := a.alloc.Current(); len(u.Assigned) != 8 {
			return fmt.Sprintf("a assigned %v", u.Assigned)
		}
		return ""
	})

	b := startLedgerMember(t, c, "b", seed, l, 0)
	first := b.alloc.Current()
	if len(first.Pending) == 0 {
		t.Fatalf("b's first Update has nothing pending: %+v", first)
	}
	p := first.Pending[0]
	var revoked []zkalloc.Partition
	select {
	case revoked = <-a.stopping:
	case <-time.After(testTimeout):
		t.Fatal("a's consumer never began to stop revoked partitions")
	}
	if !slices.Contains(revoked, p) {
		t.Fatalf("a revoked %v, not %s, which b has pending", revoked, p)
	}
	path := fmt.Sprintf("%s/groups/%s/owners/%s", zkalloc.DefaultRoot, c.group, p)
	if err := obs.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if who, _ := l.holder(p); who != "a" {
		t.Fatalf("%s worked on by %q when its claim was deleted, want a (still stopping): the test is too slow", p, who)
	}

	// b gets p once a's consumer has stopped it and acked, never before:
	// the ledger records any overlap as it happens.
	waitFor(t, testTimeout, func() string {
		if who, _ := l.holder(p); who != "b" {
			return fmt.Sprintf("%s worked on by %q, want b", p, who)
		}
		return ""
	})
	_, got := l.holder(p)
	a.mu.Lock()
	stopped := a.stopped
	a.mu.Unlock()
	for _, v := range l.problems() {
		t.Error(v)
	}
	if stopped.IsZero() || got.Before(stopped) {
		t.Fatalf("b started %s %v after its claim was deleted, while a's consumer was still stopping it", p, got.Sub(deleted).Round(time.Millisecond))
	}
	t.Logf("claim of %s deleted; a's consumer stopped it %v later; b started it %v after the delete",
		p, stopped.Sub(deleted).Round(time.Millisecond), got.Sub(deleted).Round(time.Millisecond))
}
