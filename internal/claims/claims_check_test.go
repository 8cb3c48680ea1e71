package claims_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A claim deleted from outside (an operator, a script) while still wanted
// is noticed by the periodic check within about a session timeout (well
// within the bound of three session timeouts plus 5 s) and reported
// Vanished, not Held: its hold record still names this session, so no
// other member takes the partition, and the member must stop using it.
// It is not created again while wanted; once no longer wanted its hold
// record is released, and wanted again it is claimed anew, with a larger
// token. The other claims are left as they are. (Before, the claim was
// created again at once, while the next owner of a hand-off could take
// it in between: issue 24.)
func TestClaimsDeletedClaimVanishes(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	const timeout = 4 * time.Second
	a := startClaimer(t, []string{srv.Addr()}, "a", timeout)
	ts := actortest.Parts("t", 0, 1)
	d := a.want(ts...)
	before := a.waitHeld(holds(d, ts))

	if err := obs.Conn.Delete(claimPath(ts[0]), -1); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	a.waitHeld("with t:0 vanished", func(h decision.Held) bool {
		return slices.Equal(h.Partitions, ts[1:]) && slices.Equal(h.Vanished, ts[:1])
	})
	took := time.Since(deleted)
	t.Logf("claim found vanished %v after it was deleted (session timeout %v)", took.Round(time.Millisecond), a.st.Timeout)
	if bound := a.st.Timeout + 5*time.Second; took > bound {
		t.Errorf("vanished after %v, want within %v", took, bound)
	}
	checkHold(t, obs.Conn, ts[0], a.st.SessionID, "a")
	if tokenOf(a.last, ts[1]) != tokenOf(before, ts[1]) {
		t.Errorf("t:1's token changed from %d to %d; its claim was not touched", tokenOf(before, ts[1]), tokenOf(a.last, ts[1]))
	}

	// Still wanted: not created again. Each Want is answered without
	// it (a Held answering it proves the attempt looked).
	d = a.want(ts...)
	a.waitHeld("answering a Want with t:0 still vanished", func(h decision.Held) bool {
		return h.Seq == d.Seq && slices.Equal(h.Partitions, ts[1:]) && slices.Equal(h.Vanished, ts[:1])
	})
	if ok, _, _ := obs.Conn.Exists(claimPath(ts[0])); ok {
		t.Errorf("the vanished claim on t:0 was created again while wanted")
	}

	// No longer wanted: its record is released.
	d = a.want(ts[1:]...)
	a.waitHeld("with t:0 given up", func(h decision.Held) bool {
		return h.Seq == d.Seq && slices.Equal(h.Partitions, ts[1:]) && len(h.Vanished) == 0
	})
	zktest.WaitGone(t, obs.Conn, holdPath(ts[0]), claimWait)

	// Wanted again: claimed anew, with a larger token.
	after := a.waitHeld(holds(a.want(ts...), ts))
	if tokenOf(after, ts[0]) <= tokenOf(before, ts[0]) {
		t.Errorf("t:0 claimed again with token %d, not above %d", tokenOf(after, ts[0]), tokenOf(before, ts[0]))
	}
	wantNodeTokens(t, obs.Conn, after, a.st.SessionID, "a", ts...)
	checkHold(t, obs.Conn, ts[0], a.st.SessionID, "a")
}

// A claim deleted from outside and created by another session, which
// knows nothing of hold records (an older version, or a script), before
// this one notices is no longer held: Held drops it and reports it
// Vanished, and the member revokes the partition at once. The other's
// claim is left alone. Once given up, the partition's record is released;
// wanted again, it waits for the other's claim, on its watch.
func TestClaimsDeletedClaimTakenByAnother(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a := startClaimer(t, []string{srv.Addr()}, "a", 4*time.Second)
	ts := actortest.Parts("t", 0, 1)
	d := a.want(ts...)
	a.waitHeld(holds(d, ts))

	if _, err := obs.Conn.Multi(
		&zk.DeleteRequest{Path: claimPath(ts[0]), Version: -1},
		&zk.CreateRequest{Path: claimPath(ts[0]), Data: []byte("other"), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.waitHeld("with t:0 dropped and vanished", func(h decision.Held) bool {
		return h.Seq == d.Seq && slices.Equal(h.Partitions, ts[1:]) && slices.Equal(h.Vanished, ts[:1])
	})
	t.Logf("claim taken by another session dropped after %v", time.Since(start).Round(time.Millisecond))
	checkClaim(t, obs.Conn, ts[0], obs.SessionID, "other")
	checkClaim(t, obs.Conn, ts[1], a.st.SessionID, "a")

	a.waitHeld(holds(a.want(ts[1:]...), ts[1:]))
	zktest.WaitGone(t, obs.Conn, holdPath(ts[0]), claimWait)
	d = a.want(ts...)
	a.waitHeld(holds(d, ts[1:]))
	waitWatching(t, srv.Addr(), claimPath(ts[0]), a.st.SessionID)
	checkClaim(t, obs.Conn, ts[0], obs.SessionID, "other")
}

// The periodic check costs one request while no claim of the group is
// created or deleted: the owners node's Stat. Only when that changed are
// the claims held read, and a deleted one reported vanished.
func TestClaimsCheckReadsClaimsOnlyAfterAChange(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a, check := startChecked(t, []string{srv.Addr()})
	ts := actortest.Parts("t", 0, 1, 2)
	d := a.want(ts...)
	first := a.waitHeld(holds(d, ts))

	if _, n := check(); n != 1+int64(len(ts)) {
		t.Errorf("the first check sent %d requests, want %d: the owners node, then each claim", n, 1+len(ts))
	}
	for range 2 {
		if h, n := check(); n != 1 || !slices.Equal(h.Partitions, ts) {
			t.Errorf("a check with nothing changed sent %d requests and reported %v, want 1 and every claim", n, h.Partitions)
		}
	}
	if err := obs.Conn.Delete(claimPath(ts[1]), -1); err != nil {
		t.Fatal(err)
	}
	h, n := check()
	if want := 1 + int64(len(ts)) + 1; n != want {
		t.Errorf("the check after a deletion sent %d requests, want %d: the owners node, each claim, the hold record of the one gone", n, want)
	}
	if kept := []rebalance.Partition{ts[0], ts[2]}; !slices.Equal(h.Partitions, kept) || !slices.Equal(h.Vanished, ts[1:2]) || tokenOf(h, ts[0]) != tokenOf(first, ts[0]) {
		t.Errorf("Held %+v after t:1 was deleted, want %v held with their tokens and t:1 vanished (tokens were %v)", h, kept, first.Tokens)
	}
}

// startChecked starts the claimer "a" with its periodic check on a fake
// clock, and returns it with check, which advances the clock to the next
// check and returns the Held that attempt reports, and the requests it
// sent.
func startChecked(t *testing.T, servers []string) (*claimer, func() (decision.Held, int64)) {
	t.Helper()
	clock := actor.NewFakeClock(time.Now())
	const every = time.Minute
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, func(cfg *claims.Config) {
		cfg.Clock, cfg.CheckEvery = clock, every
	})
	check := func() (decision.Held, int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), claimWait)
		defer cancel()
		if err := clock.WaitTimers(ctx, 1); err != nil {
			t.Fatal("the check timer was never armed")
		}
		a.held.Take()
		before := a.requests.Load()
		clock.Advance(every)
		for {
			select {
			case <-a.held.Changed():
				if h, ok := a.held.Take(); ok {
					return h, a.requests.Load() - before
				}
			case <-ctx.Done():
				t.Fatal("no report after the check")
			}
		}
	}
	return a, check
}
