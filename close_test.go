package zkalloc_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// Close: without Start, the drain before the hand-over, a fatal stop,
// and a Close while the network is dark.

func TestCloseWithoutStart(t *testing.T) {
	t.Parallel()
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddPartitions(context.Background(), map[string][]int32{"t": {1}}); !errors.Is(err, zkalloc.ErrNotStarted) {
		t.Errorf("AddPartitions before Start = %v, want ErrNotStarted", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, ok := <-a.Updates(); ok {
		t.Fatal("Updates() delivered after Close")
	}
	if err := a.Start(context.Background()); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
}

// Close hands the partitions over: another member lists none of them
// before this member's consumer has stopped them and acked the final
// Update. Before, Close deleted the claims at once: with a consumer taking
// 300 ms to stop, the other member started them about 300 ms before it
// had.
func TestCloseDrainsBeforeHandingOver(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(4)}
	b := c.start(c.config("b", seed))

	alloc, err := zkalloc.New(c.config("a", seed))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// a's consumer takes 300 ms to stop what is revoked.
	const stopping = 300 * time.Millisecond
	var mu sync.Mutex
	var owned []zkalloc.Partition // a's, once it has partitions
	var stoppedAt time.Time       // when a's consumer stopped them
	var final zkalloc.Update
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for u := range alloc.Updates() {
			if len(u.Revoked) > 0 && len(u.Assigned) == 0 {
				time.Sleep(stopping) // the consumer's own work, not a wait
				mu.Lock()
				stoppedAt, final = time.Now(), u
				mu.Unlock()
			}
			u.Ack()
			if len(u.Assigned) > 0 {
				mu.Lock()
				owned = u.Assigned
				mu.Unlock()
			}
		}
	}()
	c.mu.Lock()
	c.members["a"] = &member{name: "a", alloc: alloc}
	c.mu.Unlock()
	waitFor(t, testTimeout, func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(owned) == 0 {
			return "a owns nothing yet"
		}
		if u, _ := b.snapshot(); len(u.Assigned)+len(owned) != 4 || len(u.Pending) > 0 {
			return "not converged"
		}
		return ""
	})
	mu.Lock()
	aHad := slices.Clone(owned)
	mu.Unlock()

	// Record when b first lists one of a's partitions.
	var takenAt time.Time
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			u, next := b.snapshot()
			for _, p := range aHad {
				if slices.Contains(u.Assigned, p) {
					takenAt = time.Now()
					return
				}
			}
			select {
			case <-next:
			case <-time.After(testTimeout):
				return
			}
		}
	}()

	c.mu.Lock()
	delete(c.members, "a")
	c.mu.Unlock()
	if err := alloc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-consumed
	<-watched
	mu.Lock()
	defer mu.Unlock()
	if stoppedAt.IsZero() {
		t.Fatal("a's consumer never received an Update revoking everything")
	}
	if !strings.Contains(final.Reason, "closing") {
		t.Errorf("final Update's Reason %q, want it to say the allocator is closing", final.Reason)
	}
	if takenAt.IsZero() {
		t.Fatal("b never took a's partitions")
	}
	if takenAt.Before(stoppedAt) {
		t.Fatalf("b started a's partitions %v before a's consumer had stopped them", stoppedAt.Sub(takenAt))
	}
	if cur := alloc.Current(); len(cur.Assigned) != 0 {
		t.Errorf("Current after Close = %+v, want nothing assigned", cur)
	}
}

// A fatal stop ends like Close: an Update revokes everything before
// Updates closes. Here another process takes the member's name over.
func TestFatalStopRevokesEverything(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	m := c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	c.waitConverged(actortest.PartsN("t", 4))

	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	path := "/zkalloc/groups/" + c.group + "/members/a"
	// In one multi, or the member registers again in between.
	if _, err := obs.Multi(
		&zk.DeleteRequest{Path: path, Version: -1},
		&zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-time.After(testTimeout):
		t.Fatal("Updates not closed after the name was taken over")
	}
	u, _ := m.snapshot()
	if len(u.Assigned) != 0 || len(u.Revoked) == 0 {
		t.Errorf("last Update %+v, want everything revoked", u)
	}
	if cur := m.alloc.Current(); len(cur.Assigned) != 0 {
		t.Errorf("Current %+v, want nothing assigned", cur)
	}
	if err := m.alloc.Close(); !errors.Is(err, zkalloc.ErrDuplicateMember) {
		t.Errorf("Close() = %v, want ErrDuplicateMember", err)
	}
	c.mu.Lock()
	delete(c.members, "a")
	c.mu.Unlock()
}

// Close returns while the network stays dark, even when the claims actor
// is in the middle of taking claims over. A member joins a group whose
// partitions another holds; Start returns while its claims actor still
// works through the take-over, and then its network goes dark for good,
// as for a crashed member's. The claims actor's next requests wait in the
// session layer for a connection that never comes. Close used to stop the
// session only after every actor had returned, so it waited for ever for
// the claims actor (found by the chaos test: Close on a crashed member
// hung for 14 minutes). The session now goes once the member loop has
// drained, which fails those requests.
func TestCloseReturnsWhileTheNetworkIsDark(t *testing.T) {
	t.Parallel()
	srv := server(t)
	proxy := zktest.StartProxy(t, srv.Addr())
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(20_000)}
	c.start(c.config("b", seed))
	waitFor(t, testTimeout, func() string {
		if u := c.members["b"].alloc.Current(); len(u.Assigned) != 20_000 {
			return "b holds not all partitions yet"
		}
		return ""
	})
	cfg := c.config("a", nil)
	cfg.Servers = proxy.Addrs()
	a := c.start(cfg)
	proxy.Blackhole(true)
	defer proxy.Blackhole(false)
	closed := make(chan error, 1)
	began := time.Now()
	go func() { closed <- a.alloc.Close() }()
	select {
	case <-closed:
		t.Logf("Close returned after %v, the network dark", time.Since(began).Round(time.Millisecond))
	case <-time.After(6 * sessionTimeout):
		t.Fatalf("Close has not returned %v after it was called, the network dark", 6*sessionTimeout)
	}
}

// A member that closes gracefully releases its claims and their hold
// records before its session closes: the next owner creates its claim
// at once, as in any hand-off, instead of reading each record of the
// ended session to take its partition over. Before, Close left every
// hold record standing (10 here), and a member restarting into a group
// of 100,000 partitions made 102,117 requests to take them back.
func TestCloseReleasesClaimsAndHoldRecords(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	m := c.start(c.config("a", map[string][]int32{"t": ids(10)}))
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	group := "/zkalloc/groups/" + c.group
	waitFor(t, testTimeout, func() string {
		if u, _ := m.snapshot(); len(u.Assigned) != 10 {
			return "a does not own the 10 partitions yet"
		}
		return ""
	})
	if holds, _, err := obs.Children(group + "/holds"); err != nil || len(holds) != 10 {
		t.Fatalf("hold records before Close: %v, %v; want 10", holds, err)
	}
	c.stop(m)
	holds, _, err := obs.Children(group + "/holds")
	if err != nil || len(holds) != 0 {
		t.Errorf("hold records after Close: %v, %v; want none", holds, err)
	}
	owners, _, err := obs.Children(group + "/owners")
	if err != nil || len(owners) != 0 {
		t.Errorf("claims after Close: %v, %v; want none", owners, err)
	}
}
