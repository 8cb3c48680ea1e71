package session_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/session"
)

// TestSessionLeaseFollowerCutOffFromLeader connects a session to one
// follower of a 3-node ensemble (tick 500 ms, syncLimit 10) and
// black-holes that follower's link to its leader. The follower goes on
// answering the session's pings for 5 s, while the leader expires the
// session after about 2 s. The session must report Lost while the leader
// still holds it: before its ephemeral node is gone, so before another
// member could take what it held.
func TestSessionLeaseFollowerCutOffFromLeader(t *testing.T) {
	t.Parallel()
	e := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: 500 * time.Millisecond, SyncLimit: 10, QuorumProxies: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	addrs := e.Addrs()

	const timeout = 2 * time.Second
	_, w, _ := run(t, addrs[follower:follower+1], timeout)
	up := w.waitFor("up", 20*time.Second, actortest.IsUp)
	if _, err := up.Conn.Create("/member", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	observer, _, err := zk.Connect(addrs[leader:leader+1], 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()

	cut := time.Now()
	if err := e.BlackholeQuorum(follower, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.BlackholeQuorum(follower, false) })
	lost := w.waitFor("lost", 3*timeout, func(st session.State) bool { return st.Status == session.Lost })
	lostAfter := time.Since(cut)
	exists, stat, err := observer.Exists("/member")
	if err != nil || !exists || stat.EphemeralOwner != up.SessionID {
		t.Errorf("when Lost was reported (%v after the cut) the leader had already expired the session (exists %v, err %v)",
			lostAfter.Round(time.Millisecond), exists, err)
	}
	if lost.SessionID != up.SessionID {
		t.Errorf("Lost names session %#x, want %#x", lost.SessionID, up.SessionID)
	}
	zktest.WaitGone(t, observer, "/member", 3*timeout)
	t.Logf("Lost %v after the cut; the leader expired the session %v after it",
		lostAfter.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))
}

// TestSessionLeaseSyncs measures what the lease costs: the syncs a
// healthy session sends a second, at a session timeout of 2 s. It stays Up
// meanwhile.
func TestSessionLeaseSyncs(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	const timeout = 2 * time.Second
	var syncs atomic.Int64
	dial := func(network, address string, d time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, d)
		if err != nil {
			return nil, err
		}
		return &opCounter{Conn: c, op: opSync, n: &syncs}, nil
	}
	_, w, _ := runConfig(t, session.Config{Servers: []string{srv.Addr()}, Timeout: timeout, Dialer: dial})
	up := w.waitFor("up", 10*time.Second, actortest.IsUp)
	// From one sync to the fourth after it: four intervals.
	waitUntil(t, 10*time.Second, "a sync", func() bool { return syncs.Load() >= 1 })
	begin, before := time.Now(), syncs.Load()
	waitUntil(t, 10*time.Second, "four more syncs", func() bool { return syncs.Load() >= before+4 })
	rate := float64(syncs.Load()-before) / time.Since(begin).Seconds()
	if st, ok := w.sub.Take(); ok {
		w.last = st
	}
	if st := w.last; st.Status != session.Up || st.Reconnects != up.Reconnects {
		t.Errorf("a healthy session went %v (reconnects %d) while syncing", st.Status, st.Reconnects)
	}
	if want := float64(time.Second) / float64(timeout/4); rate > 1.2*want {
		t.Errorf("%.2f syncs a second, want at most about %.2f (one each T/4 after the last answer)", rate, want)
	}
	t.Logf("%.2f syncs a second at a session timeout of %v", rate, timeout)
}

// opSync is the opcode of a sync request.
const opSync = 9

// opCounter counts the requests of one opcode written on a connection
// (the client writes one request per call).
type opCounter struct {
	net.Conn
	op int32
	n  *atomic.Int64
}

func (c *opCounter) Write(p []byte) (int, error) {
	if len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) == c.op {
		c.n.Add(1)
	}
	return c.Conn.Write(p)
}
