package claims_test

import (
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// refusingConn, while refuse reports true for a path, refuses every write
// to it (a create, a delete, a multi-operation with either) with
// errRefused: a failure that no retry cures. (Not zk.ErrNoAuth, which
// stops the actor: see ioloop.IsPermanent.)
var errRefused = errors.New("refused by the test")

type refusingConn struct {
	zksession.Conn
	refuse func(path string) bool
}

func (c refusingConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if c.refuse(p) {
		return "", errRefused
	}
	return c.Conn.Create(p, data, flags, acl)
}

func (c refusingConn) Delete(p string, version int32) error {
	if c.refuse(p) {
		return errRefused
	}
	return c.Conn.Delete(p, version)
}

func (c refusingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	for _, op := range ops {
		var path string
		switch r := op.(type) {
		case *zk.CreateRequest:
			path = r.Path
		case *zk.DeleteRequest:
			path = r.Path
		}
		if c.refuse(path) {
			return nil, errRefused
		}
	}
	return c.Conn.Multi(ops...)
}

// One claim that can be neither created nor released must not hold up the
// others: they are taken and given up, and Held reports them, while that
// one is retried. (Before, the first failure ended the attempt before its
// report, and a failed release before any create: the member never listed
// a partition for as long as the one claim failed.)
func TestClaimsOneFailingClaimDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	var refused atomic.Pointer[rebalance.Partition]
	a := startClaimerWith(t, []string{srv.Addr()}, "a", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return refusingConn{Conn: conn, refuse: func(p string) bool {
			r := refused.Load()
			return r != nil && p == claimPath(*r)
		}}
	}, nil)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	t0, t1, t2, t3 := ts[0], ts[1], ts[2], ts[3]

	// A create that keeps failing.
	refused.Store(&t1)
	d := a.want(t0, t1)
	a.waitHeld(holds(d, []rebalance.Partition{t0}))

	// A release that keeps failing: t:2 is taken all the same, and t:0,
	// whose release works, given up.
	refused.Store(nil)
	a.waitHeld(holds(a.want(t0, t1), []rebalance.Partition{t0, t1}))
	refused.Store(&t1)
	d = a.want(t2)
	a.waitHeld("with t:2 taken and t:0 given up, t:1 still held", func(h decision.Held) bool {
		return h.Seq == d.Seq && slices.Equal(h.Partitions, []rebalance.Partition{t1, t2})
	})
	zktest.WaitGone(t, obs.Conn, claimPath(t0), claimWait)
	checkClaim(t, obs.Conn, t1, a.st.SessionID, "a")

	// Once it can be, the stuck release goes through too.
	refused.Store(&t3)
	a.waitHeld(holds(d, []rebalance.Partition{t2}))
	zktest.WaitGone(t, obs.Conn, claimPath(t1), claimWait)
}

// A retry scheduled after a failure in one connection does not hold up
// the next connection's first attempt: the claims are verified and
// reported at once after a reconnection. (Before, the attempt waited for
// the retry delay, up to 3 s once failures had grown it, during which the
// member assigned nothing; the claims actor's clock here never advances,
// so it waited for ever.)
func TestClaimsRetryDelayEndsOnReconnection(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	var fail atomic.Bool
	clock := actor.NewFakeClock(time.Now())
	a := startClaimerWith(t, proxy.Addrs(), "a", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return actortest.FailingConn{Conn: conn, Fail: &fail}
	}, func(cfg *claims.Config) { cfg.Clock = clock })
	t0 := actortest.Parts("t", 0)

	fail.Store(true)
	d := a.want(t0...)
	st := actortest.ResumeAfterRetry(t, clock, 1, &fail, proxy.Reset, a.probe, &a.st)
	a.waitHeld("in the new connection", func(h decision.Held) bool {
		return h.SessionID == st.SessionID && h.Reconnects == st.Reconnects && h.Seq == d.Seq && slices.Equal(h.Partitions, t0)
	})
}

// A claim that keeps failing does not silence the warning of claims held
// too long by another member: attempts keep failing, but the holders they
// found stand, and the warning is logged. (Before, only a successful
// attempt armed it.)
func TestClaimsReportStuckWhileAnotherClaimFails(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	other := actortest.Observe(t, servers, claimWait)
	for _, p := range []string{claimPaths.Members(), claimPaths.Owners()} {
		if err := zkpath.Ensure(other.Conn, p); err != nil {
			t.Fatal(err)
		}
	}
	ts := actortest.Parts("t", 0, 1, 2)
	t0, t1, t2 := ts[0], ts[1], ts[2]
	for path, data := range map[string]string{
		claimPaths.Member("other"): `{"strategy":"range","version":"zkalloc/1"}`,
		claimPath(t0):              "other",
	} {
		if _, err := other.Conn.Create(path, []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	clock := actor.NewFakeClock(time.Now())
	logs := actortest.NewLogs()
	a := startClaimerWith(t, servers, "a", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return refusingConn{Conn: conn, refuse: func(p string) bool { return p == claimPath(t1) }}
	}, stuckConfig(clock, logs))
	d := a.want(t0, t1, t2)
	a.waitHeld(holds(d, []rebalance.Partition{t2}))
	waitTimers(t, clock, 2, "the retry and the stuck timer")
	clock.Advance(stuckBound(a.st.Timeout))
	wantStuckReport(t, logs) // past the failing claim's retries
}

// existsFailingConn fails every Exists, the read that verifies a claim
// after a reconnection, while fail is set.
type existsFailingConn struct {
	zksession.Conn
	fail *atomic.Bool
}

func (c existsFailingConn) Exists(p string) (bool, *zk.Stat, error) {
	if c.fail.Load() {
		return false, nil, zk.ErrConnectionClosed
	}
	return c.Conn.Exists(p)
}

// Claims that cannot be verified after a reconnection do not silence the
// warning of claims held too long by another member: the holders found
// before stand (see TestStuckWarningWhileDown), and the warning is
// logged once the session is up. (Before, a failed check returned before
// the attempt armed the warning and marked itself failing, so the
// warning waited for an attempt that never succeeded.)
func TestClaimsReportStuckWhileTheCheckFails(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	other := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	for _, p := range []string{claimPaths.Members(), claimPaths.Owners()} {
		if err := zkpath.Ensure(other.Conn, p); err != nil {
			t.Fatal(err)
		}
	}
	ts := actortest.Parts("t", 0, 1)
	t0, t1 := ts[0], ts[1]
	for path, data := range map[string]string{
		claimPaths.Member("other"): `{"strategy":"range","version":"zkalloc/1"}`,
		claimPath(t0):              "other",
	} {
		if _, err := other.Conn.Create(path, []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	var fail atomic.Bool
	clock := actor.NewFakeClock(time.Now())
	logs := actortest.NewLogs()
	a := startClaimerWith(t, proxy.Addrs(), "a", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return existsFailingConn{Conn: conn, fail: &fail}
	}, stuckConfig(clock, logs))
	a.waitHeld(holds(a.want(t0, t1), []rebalance.Partition{t1}))
	waitTimers(t, clock, 1, "the stuck timer") // t:0's holder is timed

	fail.Store(true)
	before := a.st.Reconnects
	proxy.Reset()
	a.waitSession("up again", func(st zksession.State) bool { return st.Status == session.Up && st.Reconnects > before })
	if r := logs.Next(t, claimWait); r.Attrs["holder"] != "" {
		t.Fatalf("log %+v, want the failed check's retry first", r)
	}
	waitTimers(t, clock, 2, "the retry of the failed check and the stuck timer")
	clock.Advance(stuckBound(a.st.Timeout))
	wantStuckReport(t, logs) // past the failing check's retries
}

// wantStuckReport skips the retries' warnings and checks the stuck
// warning that follows: an error naming t:0 held by "other", which runs
// another strategy.
func wantStuckReport(t *testing.T, logs *actortest.Logs) {
	t.Helper()
	for {
		r := logs.Next(t, claimWait)
		if r.Attrs["holder"] == "" {
			continue // a retry's warning
		}
		if r.Level != slog.LevelError || r.Attrs["partitions"] != "t:0" || r.Attrs["holder"] != "other" {
			t.Errorf("report on other's claim: %+v", r)
		}
		return
	}
}
