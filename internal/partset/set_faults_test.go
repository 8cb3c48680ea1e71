package partset_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/partitions"
)

// A retry scheduled after a failure in one connection does not hold up
// the next connection's first attempt: the set is read again at once
// after a reconnection. (The set's clock here never advances, so a retry
// that waits for its delay never comes.)
func TestSetRetryDelayEndsOnReconnection(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second)
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	var fail atomic.Bool
	clock := actor.NewFakeClock(time.Now())
	m := startSetWith(t, proxy.Addrs(), paths, map[string][]int32{"t": {0}}, func(conn zksession.Conn) zksession.Conn {
		return actortest.FailingConn{Conn: conn, Fail: &fail}
	}, func(cfg *partset.Config) { cfg.Clock = clock })
	m.waitParts(actortest.Parts("t", 0))

	// Another member adds a topic while every request fails: the read its
	// watch asks for fails, and a retry is scheduled besides the resync.
	fail.Store(true)
	if _, err := obs.Conn.Create(paths.Topic("u"), []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st := actortest.ResumeAfterRetry(t, clock, 2, &fail, proxy.Reset, m.probe, &m.st)
	want := append(actortest.Parts("t", 0), actortest.Parts("u", 1)...)
	actortest.AwaitChan(t, m.set.Views(), &m.last, 10*time.Second, "view with the new topic in the new connection", func(v partitions.View) bool {
		return v.SessionID == st.SessionID && v.Reconnects == st.Reconnects && slices.Equal(v.Partitions, want)
	})
}
