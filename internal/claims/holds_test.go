package claims_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// The hold records (internal/claims/holds.go): a partition moves only on its
// holder's release or the end of its holder's session, whoever deletes
// its claim.

// waitWatching waits until the server lists session sid among the
// watchers of path.
func waitWatching(t *testing.T, addr, path string, sid int64) {
	t.Helper()
	deadline := time.Now().Add(claimWait)
	for !slices.Contains(watchers(t, addr, path), fmt.Sprintf("0x%x", sid)) {
		if time.Now().After(deadline) {
			t.Fatalf("session %#x does not watch %s", sid, path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A claim deleted from outside while its holder's session lives, and
// while another member waits for it, is not taken: the taker finds the
// holder's hold record and, its member node alive, waits. It takes the
// partition once the holder releases the record (which it does once it no
// longer wants the partition), or once the holder's session ends, closed
// or expired. (Before, the taker's watch on the claim fired at the
// delete and it created the claim at once, while the holder still listed
// the partition: two owners, issue 24.)
func TestClaimsNoTakeOverWithoutReleaseOrEnd(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"released", "closed", "expired"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			srv := zktest.Standalone(t, zktest.Options{})
			proxy := zktest.StartProxy(t, srv.Addr())
			obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
			const timeout = 4 * time.Second
			a := startClaimer(t, proxy.Addrs(), "a", timeout)
			b := startClaimer(t, []string{srv.Addr()}, "b", timeout)
			t0 := actortest.Parts("t", 0)
			a.waitHeld(holds(a.want(t0...), t0))
			db := b.want(t0...)
			b.waitHeld(holds(db, nil))
			waitWatching(t, srv.Addr(), claimPath(t0[0]), b.st.SessionID)

			if err := obs.Conn.Delete(claimPath(t0[0]), -1); err != nil {
				t.Fatal(err)
			}
			// b's watch on the claim fires; b tries again, finds a's hold
			// record and a alive, and waits on the record.
			for deadline := time.Now().Add(claimWait); !slices.Contains(watchers(t, srv.Addr(), holdPath(t0[0])), fmt.Sprintf("0x%x", b.st.SessionID)); {
				if ok, stat, _ := obs.Conn.Exists(claimPath(t0[0])); ok {
					t.Fatalf("the claim on t:0 was taken by session %#x while its holder lives", stat.EphemeralOwner)
				}
				if time.Now().After(deadline) {
					t.Fatalf("b does not watch t:0's hold record")
				}
				time.Sleep(10 * time.Millisecond)
			}
			notTaken := func(when string) {
				t.Helper()
				if ok, stat, _ := obs.Conn.Exists(claimPath(t0[0])); ok {
					t.Fatalf("%s: the claim on t:0 was taken by session %#x while its holder lives", when, stat.EphemeralOwner)
				}
				if h, ok := b.held.Take(); ok {
					b.last = h
				}
				if slices.Contains(b.last.Partitions, t0[0]) {
					t.Fatalf("%s: b holds t:0: %+v", when, b.last)
				}
			}
			notTaken("b waits on the hold record")
			checkHold(t, obs.Conn, t0[0], a.st.SessionID, "a")
			// a's periodic check (every session timeout) finds its claim
			// gone: t:0 has vanished, and still nobody has it.
			a.waitHeld("with t:0 vanished", func(h decision.Held) bool {
				return len(h.Partitions) == 0 && slices.Equal(h.Vanished, t0)
			})
			notTaken("a reports t:0 vanished")

			start := time.Now()
			switch end {
			case "released":
				da := a.want()
				a.waitHeld("with t:0 released", func(h decision.Held) bool {
					return h.Seq == da.Seq && len(h.Partitions) == 0 && len(h.Vanished) == 0
				})
			case "closed":
				a.stop()
			case "expired":
				proxy.Blackhole(true)
				defer proxy.Blackhole(false)
			}
			b.waitHeld(holds(db, t0))
			t.Logf("b took t:0 %v after a's %s", time.Since(start).Round(time.Millisecond), end)
			checkClaim(t, obs.Conn, t0[0], b.st.SessionID, "b")
			checkHold(t, obs.Conn, t0[0], b.st.SessionID, "b")
		})
	}
}

// pathCounter counts the requests sent on paths under prefix.
type pathCounter struct {
	zksession.Conn
	prefix string
	n      *atomic.Int64
}

func (c pathCounter) count(p string) {
	if strings.HasPrefix(p, c.prefix) {
		c.n.Add(1)
	}
}

func (c pathCounter) Exists(p string) (bool, *zk.Stat, error) { c.count(p); return c.Conn.Exists(p) }
func (c pathCounter) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count(p)
	return c.Conn.ExistsW(p)
}
func (c pathCounter) Get(p string) ([]byte, *zk.Stat, error) { c.count(p); return c.Conn.Get(p) }
func (c pathCounter) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count(p)
	return c.Conn.GetW(p)
}

// A crashed member's partitions are taken over in batches: each of its
// hold records is read once (its version, and the session it names),
// the session's member node once for them all, and the records are
// replaced in the multi-operations that create the claims.
func TestClaimsCrashedHolderTakenOver(t *testing.T) {
	t.Parallel()
	for _, n := range []int{250, 1500} { // looked at one by one, or grouped (groupLooksAbove)
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			srv := zktest.Standalone(t, zktest.Options{})
			servers := []string{srv.Addr()}
			obs := actortest.Observe(t, servers, claimWait)
			want := manyParts(n)
			a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
			a.waitHeld(holds(a.want(want...), want))
			var memberReads atomic.Int64
			b := startClaimerWith(t, servers, "b", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
				return pathCounter{Conn: conn, prefix: claimPaths.Members() + "/", n: &memberReads}
			}, noCheck)

			a.stop() // a crash: its session ends, its claims go, its records stay
			if kids := waitChildren(t, obs.Conn, claimPaths.Owners(), 0); kids != 0 {
				t.Fatalf("owners has %d children", kids)
			}
			before, reads := b.requests.Load(), memberReads.Load()
			b.waitHeld(holds(b.want(want...), want))
			batches := int64((n + 99) / 100)
			got := b.requests.Load() - before
			t.Logf("took over %d partitions of a crashed member in %d requests", n, got)
			// A failed batch each hundred, a read of each record, the
			// member node, a batch each hundred replacing the records, and
			// the owners node read for the proof.
			if most := int64(n) + 2*batches + 2; got > most {
				t.Errorf("taking over %d partitions of a crashed member took %d requests, want at most %d", n, got, most)
			}
			if r := memberReads.Load() - reads; r != 1 {
				t.Errorf("%d reads of the crashed member's node, want 1", r)
			}
			for _, p := range []rebalance.Partition{want[0], want[n/2], want[n-1]} {
				checkClaim(t, obs.Conn, p, b.st.SessionID, "b")
				checkHold(t, obs.Conn, p, b.st.SessionID, "b")
			}
			if kids, _, err := obs.Conn.Children(claimPaths.Holds()); err != nil || len(kids) != n {
				t.Errorf("holds has %d children (%v), want %d", len(kids), err, n)
			}
		})
	}
}

// waitChildren waits until path has n children and returns how many it
// has.
func waitChildren(t *testing.T, conn zksession.Conn, path string, n int) int {
	t.Helper()
	deadline := time.Now().Add(claimWait)
	for {
		kids, _, ev, err := conn.ChildrenW(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == n {
			return n
		}
		select {
		case <-ev:
		case <-time.After(time.Until(deadline)):
			return len(kids)
		}
	}
}

// A hold record that is not one (another program's, or garbled) proves no
// holder dead: the claimer waits for it to change (watches it), and logs
// it once. Once it is gone, the partition is claimed.
func TestClaimsForeignHoldRecordWaits(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	if err := zkpath.Ensure(obs.Conn, claimPaths.Holds()); err != nil {
		t.Fatal(err)
	}
	ts := actortest.Parts("t", 0, 1, 2)
	for i, data := range []string{"not a record", "0x12 ../etc", strings.Repeat("x", 300)} {
		if _, err := obs.Conn.Create(holdPath(ts[i]), []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	logs := actortest.NewLogs()
	a := startClaimerWith(t, []string{srv.Addr()}, "a", 4*time.Second, nil, func(cfg *claims.Config) { cfg.Logger = slog.New(logs) })
	d := a.want(ts...)
	a.waitHeld(holds(d, nil))
	for _, p := range ts {
		waitWatching(t, srv.Addr(), holdPath(p), a.st.SessionID)
	}
	for range ts {
		if r := logs.Next(t, claimWait); r.Level != slog.LevelWarn || !strings.Contains(r.Attrs["path"], "/holds/t:") {
			t.Errorf("log %+v, want a warning naming the hold record", r)
		}
	}
	// Asked again, still waiting, logged no more.
	d = a.want(ts[:2]...)
	a.waitHeld(holds(d, nil))
	d = a.want(ts...)
	a.waitHeld(holds(d, nil))
	if n := logs.Count(); n != len(ts) {
		t.Errorf("%d warnings, want %d: one per record", n, len(ts))
	}
	for _, p := range ts {
		if err := obs.Conn.Delete(holdPath(p), -1); err != nil {
			t.Fatal(err)
		}
	}
	a.waitHeld(holds(d, ts))
	checkHold(t, obs.Conn, ts[0], a.st.SessionID, "a")
}

// A hold record deleted from outside does not stop the release of its
// claim: the claim is deleted alone, and a warning logged.
func TestClaimsReleaseWithHoldRecordMissing(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	logs := actortest.NewLogs()
	a := startClaimerWith(t, []string{srv.Addr()}, "a", 4*time.Second, nil, func(cfg *claims.Config) {
		cfg.Logger, cfg.CheckEvery = slog.New(logs), -1
	})
	ts := actortest.Parts("t", 0, 1)
	a.waitHeld(holds(a.want(ts...), ts))
	if err := obs.Conn.Delete(holdPath(ts[0]), -1); err != nil {
		t.Fatal(err)
	}
	a.waitHeld(holds(a.want(), nil))
	for _, path := range []string{claimPaths.Owners(), claimPaths.Holds()} {
		if kids, _, err := obs.Conn.Children(path); err != nil || len(kids) != 0 {
			t.Errorf("%s has children %v (%v) after the release, want none", path, kids, err)
		}
	}
	if r := logs.Next(t, claimWait); !strings.Contains(r.Msg, "hold record") || r.Attrs["partition"] != "t:0" {
		t.Errorf("log %+v, want a warning of t:0's missing hold record", r)
	}
}

// Members of an older version create claims without hold records and
// ignore records. A member of this version waits for such a claim as
// before; a record left by a session that has ended, under the older
// member's claim, is replaced once the claim is released.
func TestClaimsMixedVersions(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	for _, p := range []string{claimPaths.Owners(), claimPaths.Holds()} {
		if err := zkpath.Ensure(obs.Conn, p); err != nil {
			t.Fatal(err)
		}
	}
	ts := actortest.Parts("t", 0, 1)
	// t:0: an older member's claim. t:1: the same, over the record of a
	// member of this version whose session has ended.
	for _, p := range ts {
		if _, err := obs.Conn.Create(claimPath(p), []byte("old"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := obs.Conn.Create(holdPath(ts[1]), []byte("0x1234 gone"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	a := startClaimer(t, []string{srv.Addr()}, "a", 4*time.Second)
	d := a.want(ts...)
	a.waitHeld(holds(d, nil))
	for _, p := range ts { // on the claim's watch
		waitWatching(t, srv.Addr(), claimPath(p), a.st.SessionID)
	}
	for _, p := range ts {
		if err := obs.Conn.Delete(claimPath(p), -1); err != nil {
			t.Fatal(err)
		}
	}
	a.waitHeld(holds(d, ts))
	for _, p := range ts {
		checkClaim(t, obs.Conn, p, a.st.SessionID, "a")
		checkHold(t, obs.Conn, p, a.st.SessionID, "a")
	}
}

// A taker waiting for a live holder watches its member node, for the end
// of its session. A change of the node's data is no end: the watch is
// armed again, one request, and the claims stay waiting. (A write to the
// member's own node is how a session may prove its lease, issue 24.)
func TestClaimsHolderNodeChangeKeepsWaiting(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, noCheck)
	ts := actortest.Parts("t", 0, 1, 2)
	a.waitHeld(holds(a.want(ts...), ts))
	for _, p := range ts {
		if err := obs.Conn.Delete(claimPath(p), -1); err != nil {
			t.Fatal(err)
		}
	}
	db := b.want(ts...)
	b.waitHeld(holds(db, nil))
	waitWatching(t, srv.Addr(), claimPaths.Member("a"), b.st.SessionID)
	before := b.requests.Load()
	if _, err := obs.Conn.Set(claimPaths.Member("a"), []byte("beat"), -1); err != nil {
		t.Fatal(err)
	}
	waitWatching(t, srv.Addr(), claimPaths.Member("a"), b.st.SessionID)
	if n := b.requests.Load() - before; n != 1 {
		t.Errorf("a change of the holder's member node cost %d requests, want 1 (its watch armed again)", n)
	}
	if h, ok := b.held.Take(); ok {
		b.last = h
	}
	if len(b.last.Partitions) != 0 {
		t.Errorf("b holds %v after the holder's node changed", b.last.Partitions)
	}
	// The end of a's session is still noticed.
	a.stop()
	b.waitHeld(holds(db, ts))
}

// After a new session, the records of the old one are this member's to
// replace: the partitions are claimed again, each record naming the new
// session.
func TestClaimsOldSessionsRecordsReplaced(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	const timeout = 2 * time.Second
	a := startClaimer(t, proxy.Addrs(), "a", timeout)
	ts := actortest.Parts("t", 0, 1, 2)
	a.waitHeld(holds(a.want(ts...), ts))
	old := a.st.SessionID
	proxy.Blackhole(true)
	zktest.WaitGone(t, obs.Conn, claimPath(ts[0]), 4*timeout)
	proxy.Blackhole(false)
	st := a.waitSession("up in a new session", func(st zksession.State) bool {
		return st.Status == session.Up && st.SessionID != old
	})
	checkHold(t, obs.Conn, ts[0], old, "a")
	a.waitHeld(holds(a.want(ts...), ts))
	for _, p := range ts {
		checkClaim(t, obs.Conn, p, st.SessionID, "a")
		checkHold(t, obs.Conn, p, st.SessionID, "a")
	}
}
