package integration_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// TestFollowerCutOffNeverTwoOwners: member a talks only to a follower,
// member b only to the leader, on a 3-node ensemble (tick 500 ms,
// syncLimit 10, session timeout 2 s). The follower's link to its leader
// goes dark. The follower goes on answering a for 5 s, while the leader
// expires a's session after about 2 s and b takes a's partitions. a must
// have revoked them all by then: when b's consumer receives an Update
// listing one of them, a's Current lists nothing and a's consumer has
// received the Update that revoked everything.
//
// Before the lease was renewed only through the leader, a went on
// listing its partitions until the follower gave up, about 5 s after the
// cut, and b listed them from about 2.2 s: two owners for about 3 s.
func TestFollowerCutOffNeverTwoOwners(t *testing.T) {
	t.Parallel()
	ens := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: 500 * time.Millisecond, SyncLimit: 10, QuorumProxies: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := ens.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	addrs := ens.Addrs()
	rec := history.NewRecorder(nil)
	seed := map[string][]int32{"t": ids(8)}
	all := actortest.PartsN("t", 8)
	rec.Expect(all)
	config := func(name, server string) zkalloc.Config {
		return zkalloc.Config{
			Servers:        []string{server},
			Group:          "follower",
			Member:         name,
			Partitions:     seed,
			SessionTimeout: 2 * time.Second,
			Logger:         testLogger(),
		}
	}
	a := startRecorded(t, rec, config("a", addrs[follower]), nil)
	var (
		mu       sync.Mutex
		aHad     []zkalloc.Partition // a's partitions when the link went dark
		takeover time.Time           // when b received an Update listing one of them
		aThen    zkalloc.Update      // a's Current at that instant
	)
	b := startRecorded(t, rec, config("b", addrs[leader]), func(u zkalloc.Update) {
		mu.Lock()
		defer mu.Unlock()
		if takeover.IsZero() && slices.ContainsFunc(u.Assigned, func(p zkalloc.Partition) bool { return slices.Contains(aHad, p) }) {
			takeover, aThen = time.Now(), a.alloc.Current()
		}
	})
	waitFor(t, testTimeout, func() string { return split(a, b, 8) })

	mu.Lock()
	aHad = a.alloc.Current().Assigned
	mu.Unlock()
	cut := time.Now()
	if err := ens.BlackholeQuorum(follower, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() string {
		if u := b.alloc.Current(); len(u.Assigned) != 8 {
			return fmt.Sprintf("b has %v", u.Assigned)
		}
		return ""
	})
	mu.Lock()
	took, aAt := takeover.Sub(cut), aThen
	mu.Unlock()
	if len(aAt.Assigned) > 0 {
		t.Errorf("b listed a's partitions %v after the cut while a's Current still listed %v (%s)", took, aAt.Assigned, aAt.Reason)
	}
	h := rec.History()
	if report := history.Check(h, history.Options{Expected: all}); len(report.DoubleOwnerships) > 0 {
		t.Errorf("double ownerships: %v", report.DoubleOwnerships)
	}
	var lost time.Time // when a's consumer received the Update revoking everything
	for _, e := range h.Events {
		if e.Member == "a" && e.Kind == history.KindReceived && e.Time.After(cut) && len(e.Assigned) == 0 {
			lost = e.Time
			break
		}
	}
	if lost.IsZero() || !lost.Before(cut.Add(took)) {
		t.Fatalf("a's consumer received no Update revoking everything before b listed its partitions (%v after the cut)", took)
	}
	t.Logf("cut at 0: a revoked everything at +%v, b listed a's %d partitions at +%v",
		lost.Sub(cut).Round(time.Millisecond), len(aHad), took.Round(time.Millisecond))

	// Restored, the follower rejoins and a comes back in a new session.
	if err := ens.BlackholeQuorum(follower, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, testTimeout, func() string { return split(a, b, 8) })
}

// recorded is a member whose consumer records into a history and acks at
// once.
type recorded struct {
	alloc *zkalloc.Allocator
	done  chan struct{}
}

// startRecorded starts a member whose consumer records every Update in
// rec, calls seen (if not nil) and acks. It is closed when the test ends.
func startRecorded(t *testing.T, rec *history.Recorder, cfg zkalloc.Config, seen func(zkalloc.Update)) *recorded {
	t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &recorded{alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			seq := rec.Received(cfg.Member, u.Generation, u.Members, u.Assigned, u.Revoked)
			if seen != nil {
				seen(u)
			}
			rec.Acked(cfg.Member, seq)
			u.Ack()
		}
		rec.Closed(cfg.Member)
	}()
	t.Cleanup(func() {
		if err := alloc.Close(); err != nil {
			t.Errorf("Close %s: %v", cfg.Member, err)
		}
		<-m.done
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return m
}

// split tells what keeps a and b from sharing n partitions at one
// generation, with none pending; "" if nothing.
func split(a, b *recorded, n int) string {
	ua, ub := a.alloc.Current(), b.alloc.Current()
	switch {
	case ua.Generation != ub.Generation:
		return fmt.Sprintf("generations %d and %d", ua.Generation, ub.Generation)
	case len(ua.Pending)+len(ub.Pending) > 0:
		return fmt.Sprintf("pending %v and %v", ua.Pending, ub.Pending)
	case len(ua.Assigned) == 0 || len(ub.Assigned) == 0 || len(ua.Assigned)+len(ub.Assigned) != n:
		return fmt.Sprintf("assigned %v and %v", ua.Assigned, ub.Assigned)
	}
	return ""
}
