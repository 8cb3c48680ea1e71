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

// TestDeposedLeaderNeverTwoOwners (issue 24, item 3): member a, with
// DisconnectGrace, talks only to the LEADER of a 3-node ensemble (tick
// 1 s, syncLimit 2); member b talks only to the followers. The leader is
// cut off from its peers by a firewall on its host that rejects what they
// send (zktest's Ensemble.Reject): they notice at once and elect a new
// leader, which restarts every session's expiry clock and expires a's
// session T after its start, and b takes a's partitions. The old leader,
// hearing nothing, answers a's syncs by itself until its syncLimit has
// passed without acknowledgements: (syncLimit+1) ticks at most. So a
// sync proves nothing once another leader may lead, and a must report
// Lost (revoke everything, its consumer acking) before b lists any of its
// partitions: the history shows no partition held by both.
//
// T is one tick (1 s), the least the ensemble allows here
// (MinSessionTimeout): the old leader then outlives the new leader's
// expiry of a's session in every round, and a lease renewed by its syncs
// outlives it too. Measured before the lease needed a write the quorum
// commits (3-round runs, 5 rounds in all): a revoked 0.55 to 1.25 s
// after b listed its partitions, in every round; with T = 2 ticks, in 2
// rounds of 5 (0.43 s); with the leader isolated both ways
// (Ensemble.Isolate), in none (its peers then wait syncLimit ticks before
// they elect, about as long as it goes on answering).
func TestDeposedLeaderNeverTwoOwners(t *testing.T) {
	t.Parallel()
	const (
		tick    = time.Second
		timeout = tick // the session timeout asked for, and granted
		rounds  = 3
	)
	ens := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: tick, SyncLimit: 2, QuorumProxies: true, MinSessionTimeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	addrs := ens.Addrs()
	seed := map[string][]int32{"t": ids(8)}
	all := actortest.PartsN("t", 8)
	for round := range rounds {
		leader, err := ens.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var followers []string
		for i, a := range addrs {
			if i != leader {
				followers = append(followers, a)
			}
		}
		rec := history.NewRecorder(nil)
		rec.Expect(all)
		config := func(name string, servers []string, grace time.Duration) zkalloc.Config {
			return zkalloc.Config{
				Servers:         servers,
				Group:           fmt.Sprintf("deposed-%d", round),
				Member:          name,
				Partitions:      seed,
				SessionTimeout:  timeout,
				DisconnectGrace: grace,
				Logger:          testLogger(),
			}
		}
		a := startRecorded(t, rec, config("a", addrs[leader:leader+1], 10*timeout), nil)
		var (
			mu    sync.Mutex
			aHad  []zkalloc.Partition
			taken time.Time // when b first listed one of them
		)
		b := startRecorded(t, rec, config("b", followers, 0), func(u zkalloc.Update) {
			mu.Lock()
			defer mu.Unlock()
			if taken.IsZero() && slices.ContainsFunc(u.Assigned, func(p zkalloc.Partition) bool { return slices.Contains(aHad, p) }) {
				taken = time.Now()
			}
		})
		waitFor(t, testTimeout, func() string { return split(a, b, 8) })
		mu.Lock()
		aHad = a.alloc.Current().Assigned
		mu.Unlock()

		cut := time.Now()
		if err := ens.Reject(leader, true); err != nil {
			t.Fatal(err)
		}
		// Until b holds everything and a's consumer has revoked all.
		var lost time.Time
		waitFor(t, 30*time.Second, func() string {
			if lost.IsZero() && len(a.alloc.Current().Assigned) == 0 {
				lost = time.Now()
			}
			switch {
			case len(b.alloc.Current().Assigned) != 8:
				return fmt.Sprintf("b has %v", b.alloc.Current().Assigned)
			case lost.IsZero():
				return fmt.Sprintf("a still lists %v", a.alloc.Current().Assigned)
			}
			return ""
		})
		if err := ens.Reject(leader, false); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		took := taken.Sub(cut)
		mu.Unlock()
		report := history.Check(rec.History(), history.Options{Expected: all})
		var overlap time.Duration
		for _, o := range report.DoubleOwnerships {
			overlap = max(overlap, o.Duration())
		}
		t.Logf("round %d: leader %d cut off at 0; a reported Lost at +%v, b listed a's partitions at +%v; longest double ownership %v",
			round, leader, lost.Sub(cut).Round(time.Millisecond), took.Round(time.Millisecond), overlap.Round(time.Millisecond))
		if n := len(report.DoubleOwnerships); n > 0 {
			t.Errorf("round %d: %d partitions held by a and b at once, for up to %v: %v", round, n, overlap.Round(time.Millisecond), report.DoubleOwnerships[0])
		}
		if err := ens.StartAll(ctx); err != nil { // the old leader rejoins
			t.Fatal(err)
		}
		waitFor(t, testTimeout, func() string { return split(a, b, 8) })
		a.close(t)
		b.close(t)
	}
}

// close closes the member before the test ends (startRecorded's cleanup
// then finds it closed).
func (r *recorded) close(t *testing.T) {
	t.Helper()
	if err := r.alloc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	<-r.done
}
