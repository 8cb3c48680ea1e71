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
)

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
