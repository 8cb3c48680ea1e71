package members_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

// A retry scheduled after a failure in one connection does not hold up
// the next connection's first attempt: the member lists the group at once
// after a reconnection. (The membership's clock here never advances, so
// a retry that waits for its delay never comes.)
func TestMembershipRetryDelayEndsOnReconnection(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, wait)
	var fail atomic.Bool
	clock := actor.NewFakeClock(time.Now())
	m := startMemberWrapped(t, proxy.Addrs(), "m", membership.Info{}, 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return actortest.FailingConn{Conn: conn, Fail: &fail}
	}, func(cfg *members.Config) { cfg.Clock = clock })
	m.waitSession("up", actortest.IsUp)
	m.waitView(listing("m"))

	// Another member joins while every request fails: the list its watch
	// asks for fails, and a retry is scheduled besides the resync.
	fail.Store(true)
	if _, err := obs.Conn.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st := actortest.ResumeAfterRetry(t, clock, 2, &fail, proxy.Reset, m.probe, &m.st)
	what, listed := listing("m", "x")
	m.waitView(what+" in the new connection", func(v membership.View) bool {
		return v.SessionID == st.SessionID && v.Reconnects == st.Reconnects && listed(v)
	})
}
