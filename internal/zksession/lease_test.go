package zksession_test

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"
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
	lost := w.waitFor("lost", 3*timeout, func(st zksession.State) bool { return st.Status == session.Lost })
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
	_, w, _ := runConfig(t, zksession.Config{Servers: []string{srv.Addr()}, Timeout: timeout, Dialer: dial})
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

// opMulti is the opcode of a multi request.
const opMulti = 14

// opCounting returns a dialer that counts, on every connection, the
// requests of opcode op written into n.
func opCounting(op int32, n *atomic.Int64) zk.Dialer {
	return func(network, address string, d time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, d)
		if err != nil {
			return nil, err
		}
		return &opCounter{Conn: c, op: op, n: n}, nil
	}
}

// TestSessionQuorumLeaseChecks runs a session with a quorum lease
// (Config.QuorumCheck) at a session timeout of 6 s: it sends checks, one
// each T/4 after the last answer, and no syncs; each is a transaction
// (the server's zxid grows by one for each); and they renew the lease:
// the session stays Up, never Lost, for more than two lease lengths. (A
// longer timeout than elsewhere: on a loaded machine a process stalled
// for 0.3 T loses any lease, and 0.6 s stalls were seen.)
func TestSessionQuorumLeaseChecks(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	observer, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	if _, err := observer.Create("/group", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	const timeout = 6 * time.Second
	var checks, syncs atomic.Int64
	dial := func(network, address string, d time.Duration) (net.Conn, error) {
		c, err := opCounting(opMulti, &checks)(network, address, d)
		if err != nil {
			return nil, err
		}
		return &opCounter{Conn: c, op: opSync, n: &syncs}, nil
	}
	_, w, _ := runConfig(t, zksession.Config{Servers: []string{srv.Addr()}, Timeout: timeout, Dialer: dial, QuorumCheck: "/group"})
	up := w.waitFor("up", 10*time.Second, actortest.IsUp)
	waitUntil(t, 10*time.Second, "a check", func() bool { return checks.Load() >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zxid0 := lastZxid(t, ctx, srv.Addr())
	begin, before := time.Now(), checks.Load()
	// 2.5 lease lengths: without renewal the lease runs out in one.
	waitUntil(t, 30*time.Second, "8 more checks", func() bool { return checks.Load() >= before+8 })
	sent := checks.Load() - before
	rate := float64(sent) / time.Since(begin).Seconds()
	zxids := lastZxid(t, ctx, srv.Addr()) - zxid0 // the last check sent may not be committed yet
	if st, ok := w.sub.Take(); ok {
		w.last = st
	}
	if st := w.last; st.Status != session.Up || st.Reconnects != up.Reconnects {
		t.Errorf("a healthy session went %v (reconnects %d) with the quorum lease", st.Status, st.Reconnects)
	}
	if i := slices.IndexFunc(w.states(), func(st zksession.State) bool { return st.Status == session.Lost }); i >= 0 {
		t.Errorf("states published: %v; want no Lost: the checks renew the lease", briefStates(w.states()))
	}
	if n := syncs.Load(); n != 0 {
		t.Errorf("%d syncs sent with the quorum lease, want none", n)
	}
	if want := float64(time.Second) / float64(timeout/4); rate > 1.2*want || rate < want/2 {
		t.Errorf("%.2f checks a second, want about %.2f (one each T/4 after the last answer)", rate, want)
	}
	if zxids < sent-1 {
		t.Errorf("the server's zxid grew by %d over %d checks, want one transaction each", zxids, sent)
	}
	t.Logf("%.2f checks a second at a session timeout of %v; zxid +%d over %d checks", rate, timeout, zxids, sent)
}

// TestSessionQuorumLeaseDeposedLeader connects a session with a quorum
// lease to the leader of a 3-node ensemble (tick 500 ms, syncLimit 10),
// and cuts the leader off from both followers. The deposed leader goes on
// answering syncs (and serving its clients) until it steps down, about
// (syncLimit + 1) ticks later, 5.5 s; the followers elect a new leader,
// which can expire the session from about (syncLimit - 1/2) ticks + T
// after the cut, 6.75 s. A lease renewed by syncs keeps the session Up
// until the leader steps down (and runs out 0.55 T after that); the
// quorum lease runs out 0.8 T at most after the last check a quorum saw,
// while the deposed leader still serves the session.
func TestSessionQuorumLeaseDeposedLeader(t *testing.T) {
	t.Parallel()
	e := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: 500 * time.Millisecond, SyncLimit: 10, QuorumProxies: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addrs := e.Addrs()
	setup, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = setup.Create("/group", nil, 0, zk.WorldACL(zk.PermAll))
	setup.Close()
	if err != nil {
		t.Fatal(err)
	}

	const timeout = 2 * time.Second
	var requests atomic.Int64 // of the lease: checks, or syncs
	dial := func(network, address string, d time.Duration) (net.Conn, error) {
		c, err := opCounting(opMulti, &requests)(network, address, d)
		if err != nil {
			return nil, err
		}
		return &opCounter{Conn: c, op: opSync, n: &requests}, nil
	}
	_, w, _ := runConfig(t, zksession.Config{Servers: addrs[leader : leader+1], Timeout: timeout, Dialer: dial, QuorumCheck: "/group"})
	up := w.waitFor("up", 20*time.Second, actortest.IsUp)
	waitUntil(t, 10*time.Second, "three requests of the lease", func() bool { return requests.Load() >= 3 })

	before := len(w.states())
	cut := time.Now()
	if err := e.BlackholeQuorum(leader, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.BlackholeQuorum(leader, false) })
	w.waitFor("lost or suspended", 4*timeout, func(st zksession.State) bool { return st.Status != session.Up })
	lostAfter := time.Since(cut)
	states := w.states()
	if first := states[before]; first.Status != session.Lost || first.Ended || first.SessionID != up.SessionID {
		t.Fatalf("after the cut the session went %v (states %v) %v after it; want Lost by its lease, not ended, while the deposed leader still served it",
			first.Status, briefStates(states), lostAfter.Round(time.Millisecond))
	}
	if limit := time.Duration(zksession.LeaseFraction * float64(timeout)); lostAfter > limit+time.Second {
		t.Errorf("Lost %v after the cut, want within the lease (%v) and a second", lostAfter.Round(time.Millisecond), limit)
	}
	// The deposed leader steps down later. (When the new leader expires
	// the session is not waited for: with the election port open, the
	// deposed leader, whose log holds the checks it could not commit,
	// can win the next elections and hold the others up; the chaos test
	// cuts it off entirely.)
	for {
		if mode, _ := e.Mode(ctx, leader); mode != "leader" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the deposed leader never stepped down")
		case <-time.After(50 * time.Millisecond):
		}
	}
	steppedDown := time.Since(cut)
	if lostAfter >= steppedDown {
		t.Errorf("Lost %v after the cut, after the deposed leader stepped down (%v)", lostAfter.Round(time.Millisecond), steppedDown.Round(time.Millisecond))
	}
	t.Logf("Lost %v after the cut; the deposed leader stepped down %v after it", lostAfter.Round(time.Millisecond), steppedDown.Round(time.Millisecond))
}
