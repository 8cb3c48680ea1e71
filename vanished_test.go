package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// Vanished claims: a claim deleted from outside while its holder's
// session lives, outside a hand-off and during one.

// received is an Update a consumer received, and when.
type received struct {
	at time.Time
	u  zkalloc.Update
}

// recorder is a member whose consumer keeps every Update it receives, and
// acks each at once.
type recorder struct {
	alloc *zkalloc.Allocator
	done  chan struct{}
	mu    sync.Mutex
	log   []received
}

func startRecorder(t *testing.T, cfg zkalloc.Config) *recorder {
	t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for u := range alloc.Updates() {
			r.mu.Lock()
			r.log = append(r.log, received{time.Now(), u})
			r.mu.Unlock()
			u.Ack()
		}
	}()
	t.Cleanup(func() { alloc.Close(); <-r.done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return r
}

// since returns the Updates received at or after from.
func (r *recorder) since(from time.Time) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.log, func(e received) bool { return !e.at.Before(from) })
	if i < 0 {
		return nil
	}
	return slices.Clone(r.log[i:])
}

// A claim deleted by an outsider (an operator, a script) is noticed by its
// owner within about a session timeout: the owner revokes the partition at
// once, in a new Update, since it no longer holds the claim; its hold
// record keeps every other member from taking it meanwhile. Once the
// consumer has acked, the owner releases the record and claims the
// partition again, with a larger token: all well within three session
// timeouts plus 5 s. (Before, the owner created the claim again without
// a revoke, and in a hand-off the next owner could take it first: issue
// 24.)
func TestDeletedClaimIsRevokedThenRestored(t *testing.T) {
	t.Parallel()
	srv := server(t)
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(4)}
	want := actortest.PartsN("t", 4)
	a := startRecorder(t, c.config("a", seed))
	waitFor(t, testTimeout, func() string {
		if u := a.alloc.Current(); !slices.Equal(u.Assigned, want) || len(u.Pending) > 0 {
			return fmt.Sprintf("a assigned %v, pending %v", u.Assigned, u.Pending)
		}
		return ""
	})
	p := want[1]
	old, _ := a.alloc.Current().Token(p)
	path := fmt.Sprintf("%s/groups/%s/owners/%s", zkalloc.DefaultRoot, c.group, p)
	if _, stat, err := obs.Get(path); err != nil || stat.Czxid != old {
		t.Fatalf("claim %s: %v, %+v; want it with czxid %d, the token", path, err, stat, old)
	}

	if err := obs.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	bound := 3*sessionTimeout + 5*time.Second
	var revoked, back time.Time
	var tok int64
	waitFor(t, bound, func() string {
		revoked, back = time.Time{}, time.Time{}
		for _, e := range a.since(deleted) {
			switch {
			case revoked.IsZero() && slices.Contains(e.u.Revoked, p):
				revoked = e.at
			case !revoked.IsZero() && slices.Contains(e.u.Added, p):
				back = e.at
				tok, _ = e.u.Token(p)
			}
		}
		switch {
		case revoked.IsZero():
			return fmt.Sprintf("%s not revoked", p)
		case back.IsZero():
			return fmt.Sprintf("%s revoked, not added again", p)
		case tok <= old:
			return fmt.Sprintf("%s added again with token %d, not above %d", p, tok, old)
		}
		data, stat, err := obs.Get(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return "claim not back"
		case err != nil:
			return err.Error()
		case string(data) != "a" || stat.Czxid != tok:
			return fmt.Sprintf("claim %q with czxid %d, want a's with %d", data, stat.Czxid, tok)
		}
		return ""
	})
	t.Logf("%s revoked %v after the deletion, added again with a larger token %v after it (session timeout %v)",
		p, revoked.Sub(deleted).Round(time.Millisecond), back.Sub(deleted).Round(time.Millisecond), sessionTimeout)
	if u := a.alloc.Current(); !slices.Equal(u.Assigned, want) {
		t.Errorf("a's Assigned %v, want every partition again", u.Assigned)
	}
}

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
