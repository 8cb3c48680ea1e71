package claims_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// The claims actor against a real ZooKeeper: each claimer is a session and
// an Actor in one actor.Group, fed Want snapshots by the test.

// claimWait bounds every wait for the actors; generous for a loaded machine.
const claimWait = 10 * time.Second

var claimPaths = zkpath.Group{Root: "/zkalloc", Group: "claims"}

// claimer runs a session and a claims actor for one member.
type claimer struct {
	t        *testing.T
	name     string
	probe    *actor.Latest[zksession.State]
	st       zksession.State // the latest state taken from probe
	desired  *actor.Latest[decision.Want]
	held     *actor.Latest[decision.Held]
	last     decision.Held // the latest Held taken
	seq      uint64
	requests atomic.Int64 // reads and writes sent by the claims actor
	stop     func()       // cancels the group and waits for it; later calls do nothing
}

func startClaimer(t *testing.T, servers []string, name string, timeout time.Duration) *claimer {
	t.Helper()
	return startClaimerWith(t, servers, name, timeout, nil, nil)
}

// startClaimerWith is startClaimer with the claims actor's connection
// wrapped by wrap (inside the request counter) and its config changed by
// configure; either may be nil.
func startClaimerWith(t *testing.T, servers []string, name string, timeout time.Duration, wrap func(zksession.Conn) zksession.Conn, configure func(*claims.Config)) *claimer {
	t.Helper()
	if wrap == nil {
		wrap = func(conn zksession.Conn) zksession.Conn { return conn }
	}
	c := &claimer{t: t, name: name}
	cfg := zksession.Config{
		Servers:  servers,
		Timeout:  timeout,
		WrapConn: func(conn zksession.Conn) zksession.Conn { return countingConn{Conn: wrap(conn), n: &c.requests} },
	}
	run, probe := actortest.StartWithSession(t, cfg, name, func(sub *actor.Latest[zksession.State]) actor.Actor {
		cfg := claims.Config{Paths: claimPaths, Member: name, Session: sub}
		if configure != nil {
			configure(&cfg)
		}
		ca := claims.New(claims.FillConfig(cfg))
		c.desired, c.held = ca.Want(), ca.Held()
		return ca
	})
	c.probe, c.stop = probe, run.Stop
	c.waitSession("up", actortest.IsUp)
	c.register()
	return c
}

// register creates the claimer's member node in its current session, as
// the members actor would: takers judge from it whether the session
// named by a hold record lives.
func (c *claimer) register() {
	c.t.Helper()
	conn := c.st.Conn
	if err := zkpath.Ensure(conn, claimPaths.Members()); err != nil {
		c.t.Fatal(err)
	}
	if _, err := conn.Create(claimPaths.Member(c.name), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		c.t.Fatalf("register %s: %v", c.name, err)
	}
}

// noCheck turns the periodic check of the claims held off, for tests
// that count requests.
func noCheck(cfg *claims.Config) { cfg.CheckEvery = -1 }

// waitSession waits until a published session state satisfies ok.
func (c *claimer) waitSession(what string, ok func(zksession.State) bool) zksession.State {
	c.t.Helper()
	return actortest.Await(c.t, c.probe, &c.st, claimWait, c.name+": "+what+" session", ok)
}

// want sends a Want for the current session, as the rebalance actor
// would.
func (c *claimer) want(ps ...rebalance.Partition) decision.Want {
	c.seq++
	ps = slices.Clone(ps)
	rebalance.Sort(ps)
	d := decision.Want{SessionID: c.st.SessionID, Reconnects: c.st.Reconnects, Seq: c.seq, Partitions: ps}
	c.desired.Set(d)
	return d
}

// waitHeld waits until a reported Held satisfies ok.
func (c *claimer) waitHeld(what string, ok func(decision.Held) bool) decision.Held {
	c.t.Helper()
	return actortest.Await(c.t, c.held, &c.last, claimWait, c.name+": Held "+what, ok)
}

// holds is the condition "Held answers d, in d's session, with exactly
// held".
func holds(d decision.Want, held []rebalance.Partition) (string, func(decision.Held) bool) {
	return fmt.Sprintf("of %v for seq %d", held, d.Seq), func(h decision.Held) bool {
		return h.Seq == d.Seq && h.SessionID == d.SessionID && slices.Equal(h.Partitions, held)
	}
}

// countingConn counts the requests an actor sends.
type countingConn struct {
	zksession.Conn
	n *atomic.Int64
}

func (c countingConn) Get(p string) ([]byte, *zk.Stat, error) { c.n.Add(1); return c.Conn.Get(p) }
func (c countingConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.n.Add(1)
	return c.Conn.GetW(p)
}
func (c countingConn) Exists(p string) (bool, *zk.Stat, error) {
	c.n.Add(1)
	return c.Conn.Exists(p)
}
func (c countingConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.n.Add(1)
	return c.Conn.ExistsW(p)
}
func (c countingConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.n.Add(1)
	return c.Conn.Create(p, data, flags, acl)
}
func (c countingConn) Delete(p string, version int32) error {
	c.n.Add(1)
	return c.Conn.Delete(p, version)
}
func (c countingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.n.Add(1)
	return c.Conn.Multi(ops...)
}

func claimPath(p rebalance.Partition) string { return claimPaths.Owners() + "/" + p.String() }

func holdPath(p rebalance.Partition) string { return claimPaths.Holds() + "/" + p.String() }

// checkHold checks that p's hold record exists and names session owner
// of member.
func checkHold(t *testing.T, conn zksession.Conn, p rebalance.Partition, owner int64, member string) {
	t.Helper()
	got, stat, err := conn.Get(holdPath(p))
	if err != nil {
		t.Fatalf("hold record %s: %v", p, err)
	}
	if want := fmt.Sprintf("%#x %s", owner, member); string(got) != want || stat.EphemeralOwner != 0 {
		t.Errorf("hold record %s: %q, owner %#x; want persistent, %q", p, got, stat.EphemeralOwner, want)
	}
}

// checkClaim checks that p's claim node exists, is owned by owner and
// holds data, and returns its stat.
func checkClaim(t *testing.T, conn zksession.Conn, p rebalance.Partition, owner int64, data string) *zk.Stat {
	t.Helper()
	got, stat, err := conn.Get(claimPath(p))
	if err != nil {
		t.Fatalf("claim %s: %v", p, err)
	}
	if stat.EphemeralOwner != owner || string(got) != data {
		t.Errorf("claim %s: owner %#x, data %q; want %#x, %q", p, stat.EphemeralOwner, got, owner, data)
	}
	return stat
}

// waitWatched waits until session sid watches n paths (`wchc`).
func waitWatched(t *testing.T, addr string, sid int64, n int) {
	t.Helper()
	deadline := time.Now().Add(claimWait)
	for {
		out, err := zktest.FourLetter(context.Background(), addr, "wchc")
		if err != nil {
			t.Fatal(err)
		}
		got, in := 0, false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, "0x"):
				in = line == fmt.Sprintf("0x%x", sid)
			case in && strings.HasPrefix(strings.TrimSpace(line), "/"):
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %#x watches %d paths, want %d", sid, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watchers returns the hex session IDs the server lists (`wchp`) as
// watching path.
func watchers(t *testing.T, addr, path string) []string {
	t.Helper()
	out, err := zktest.FourLetter(context.Background(), addr, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			in = line == path
		case in && strings.TrimSpace(line) != "":
			ids = append(ids, strings.TrimSpace(line))
		}
	}
	return ids
}

func TestClaimsOneHoldsOtherWaitsThenTakesOver(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, noCheck)
	t0 := actortest.Parts("t", 0)

	da, db := a.want(t0...), b.want(t0...)
	answered := func(d decision.Want) func(decision.Held) bool {
		return func(h decision.Held) bool { return h.Seq == d.Seq && h.SessionID == d.SessionID }
	}
	ha := a.waitHeld("answering the first Want", answered(da))
	hb := b.waitHeld("answering the first Want", answered(db))
	holder, waiter, dh, dw := a, b, da, db
	if len(hb.Partitions) > 0 {
		holder, waiter, dh, dw = b, a, db, da
	}
	if len(ha.Partitions)+len(hb.Partitions) != 1 {
		t.Fatalf("Held a %+v, b %+v; want exactly one to hold t:0", ha, hb)
	}
	if what, ok := holds(dh, t0); !ok(holder.last) {
		t.Errorf("holder %s: %+v, want Held %s", holder.name, holder.last, what)
	}
	if what, ok := holds(dw, nil); !ok(waiter.last) {
		t.Errorf("waiter %s: %+v, want Held %s", waiter.name, waiter.last, what)
	}
	checkClaim(t, obs.Conn, t0[0], holder.st.SessionID, holder.name)

	// The waiter waits on a watch of the claim node, not by polling: the
	// server lists its session among the node's watchers, and it sends
	// nothing until the watch fires.
	requests := waiter.requests.Load()
	if ids := watchers(t, srv.Addr(), claimPath(t0[0])); !slices.Contains(ids, fmt.Sprintf("0x%x", waiter.st.SessionID)) {
		t.Errorf("watchers of %s: %v; want the waiter's session %#x", claimPath(t0[0]), ids, waiter.st.SessionID)
	}

	// The holder no longer wants it: it deletes its node, the waiter's
	// watch fires and the waiter claims it.
	holder.waitHeld(holds(holder.want(), nil))
	waiter.waitHeld(holds(dw, t0))
	checkClaim(t, obs.Conn, t0[0], waiter.st.SessionID, waiter.name)
	if n := waiter.requests.Load() - requests; n != 1 {
		t.Errorf("the waiter sent %d requests between reporting t:0 not held and holding it, want 1 (the create after its watch fired)", n)
	}
}

// A watch outlives a Want that dropped its partition, so that wanting
// it again sends no request, and the claim is taken once its holder lets
// it go.
func TestClaimsWatchOutlivesUnwantedClaim(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, noCheck)
	a.waitHeld(holds(a.want(actortest.Parts("t", 0, 1)...), actortest.Parts("t", 0, 1)))
	b.waitHeld(holds(b.want(actortest.Parts("t", 0, 1, 2)...), actortest.Parts("t", 2)))
	b.waitHeld(holds(b.want(actortest.Parts("t", 1, 2)...), actortest.Parts("t", 2)))
	before := b.requests.Load()
	b.waitHeld(holds(b.want(actortest.Parts("t", 0, 1, 2)...), actortest.Parts("t", 2)))
	if n := b.requests.Load() - before; n != 0 {
		t.Errorf("wanting t:0 again, still watched, sent %d requests, want 0", n)
	}
	d := b.want(actortest.Parts("t", 0, 2)...)
	b.waitHeld(holds(d, actortest.Parts("t", 2)))
	a.waitHeld(holds(a.want(), nil))
	b.waitHeld(holds(d, actortest.Parts("t", 0, 2)))
}

func TestClaimsTakeOverFromClosedSession(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	a := startClaimer(t, servers, "a", 4*time.Second)
	b := startClaimer(t, servers, "b", 4*time.Second)
	t0 := actortest.Parts("t", 0)
	a.waitHeld(holds(a.want(t0...), t0))
	db := b.want(t0...)
	b.waitHeld(holds(db, nil))

	// a's session ends without a release: the server deletes its node.
	a.stop()
	start := time.Now()
	b.waitHeld(holds(db, t0))
	t.Logf("taken over %v after the holder's session closed", time.Since(start))
	checkClaim(t, obs.Conn, t0[0], b.st.SessionID, "b")
}

func TestClaimsReleaseLeavesAnotherSessionsNode(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	a := startClaimer(t, servers, "a", 4*time.Second)
	t0 := actortest.Parts("t", 0)
	a.waitHeld(holds(a.want(t0...), t0))

	// Behind a's back its claim vanishes and another session claims it.
	if err := obs.Conn.Delete(claimPath(t0[0]), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Conn.Create(claimPath(t0[0]), []byte("other"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	a.waitHeld(holds(a.want(), nil))
	checkClaim(t, obs.Conn, t0[0], obs.SessionID, "other")
}

func TestClaimsVerifiedAfterReconnect(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a := startClaimer(t, proxy.Addrs(), "a", 4*time.Second)
	want := actortest.Parts("t", 0, 1)
	d := a.want(want...)
	a.waitHeld(holds(d, want))
	kept := checkClaim(t, obs.Conn, want[0], a.st.SessionID, "a")
	// One claim vanishes behind a's back; a only learns of it by checking
	// its claims after the reconnection.
	if err := obs.Conn.Delete(claimPath(want[1]), -1); err != nil {
		t.Fatal(err)
	}

	sid, before := a.st.SessionID, a.st.Reconnects
	proxy.Reset()
	st := a.waitSession("up again", func(st zksession.State) bool {
		return st.Status == session.Up && st.Reconnects > before
	})
	if st.SessionID != sid {
		t.Fatalf("the session changed from %#x to %#x after a reset", sid, st.SessionID)
	}
	// The claim found missing has vanished: its hold record stands, and
	// it is not created again while wanted.
	h := a.waitHeld("in the reconnected session", func(h decision.Held) bool {
		return h.SessionID == sid && h.Reconnects == st.Reconnects && h.Seq == d.Seq && slices.Equal(h.Partitions, want[:1]) && slices.Equal(h.Vanished, want[1:])
	})
	if again := checkClaim(t, obs.Conn, want[0], sid, "a"); again.Czxid != kept.Czxid {
		t.Errorf("claim %s was re-created (czxid %d, was %d); want it verified and kept", want[0], again.Czxid, kept.Czxid)
	}
	if got := tokenOf(h, want[0]); got != kept.Czxid {
		t.Errorf("token of the claim kept %d, want still %d", got, kept.Czxid)
	}
	checkHold(t, obs.Conn, want[1], sid, "a")
	if ok, _, _ := obs.Conn.Exists(claimPath(want[1])); ok {
		t.Errorf("the vanished claim on %s was created again", want[1])
	}
}

func TestClaimsRecreatedAfterExpiry(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	const timeout = 2 * time.Second
	a := startClaimer(t, proxy.Addrs(), "a", timeout)
	t0 := actortest.Parts("t", 0)
	a.waitHeld(holds(a.want(t0...), t0))
	old := a.st.SessionID

	// Cut a off until the server expires its session and deletes its claim.
	proxy.Blackhole(true)
	zktest.WaitGone(t, obs.Conn, claimPath(t0[0]), 4*timeout)
	proxy.Blackhole(false)
	st := a.waitSession("up in a new session", func(st zksession.State) bool {
		return st.Status == session.Up && st.SessionID != old
	})
	// The Want still names the old session: nothing is claimed for it.
	a.waitHeld("empty in the new session", func(h decision.Held) bool {
		return h.SessionID == st.SessionID && len(h.Partitions) == 0
	})
	a.waitHeld(holds(a.want(t0...), t0))
	checkClaim(t, obs.Conn, t0[0], st.SessionID, "a")
}

func TestClaimsIgnoreDesiredOfAnotherSession(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a := startClaimer(t, []string{srv.Addr()}, "a", 4*time.Second)
	d := decision.Want{SessionID: a.st.SessionID + 1, Reconnects: a.st.Reconnects, Seq: 1, Partitions: actortest.Parts("t", 0)}
	a.desired.Set(d)
	a.waitHeld("answering a Want of another session", func(h decision.Held) bool { return h.Seq == d.Seq })
	if a.last.SessionID != a.st.SessionID || len(a.last.Partitions) != 0 {
		t.Errorf("Held %+v; want nothing held in session %#x", a.last, a.st.SessionID)
	}
	_, _, err := obs.Conn.Get(claimPath(actortest.Parts("t", 0)[0]))
	if !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("claim t:0 read: %v; want it never created", err)
	}
}

func TestClaimsReleasedAfterLostSessionResumes(t *testing.T) {
	t.Parallel()
	// The session reports Lost at 80% of its timeout without a reply, while
	// the server keeps it for the whole timeout: a long timeout leaves room
	// to reconnect (the client sleeps 1s before each attempt) in between.
	const timeout = 12 * time.Second
	srv := zktest.Standalone(t, zktest.Options{MaxSessionTimeout: timeout})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a := startClaimer(t, proxy.Addrs(), "a", timeout)
	a.waitHeld(holds(a.want(actortest.Parts("t", 0, 1)...), actortest.Parts("t", 0, 1)))
	sid, before := a.st.SessionID, a.st.Reconnects

	proxy.Blackhole(true)
	a.waitSession("lost", func(st zksession.State) bool { return st.Status == session.Lost })
	lost := a.st
	proxy.Blackhole(false)
	// Meanwhile the rebalance actor has moved t:1 elsewhere.
	d := a.want(actortest.Parts("t", 0)...)
	st := a.waitSession("up again", func(st zksession.State) bool { return st.Status == session.Up && st.Reconnects > before })
	t.Logf("lost %v after the last reply, up again %v after that", lost.Since.Sub(lost.LastReply), st.Since.Sub(lost.Since))
	if st.SessionID != sid {
		t.Fatalf("the server expired session %#x before it could resume (now %#x): the reconnection was too slow for this test", sid, st.SessionID)
	}
	a.waitHeld("in the resumed session", func(h decision.Held) bool {
		return h.SessionID == sid && h.Reconnects == st.Reconnects && h.Seq == d.Seq && slices.Equal(h.Partitions, actortest.Parts("t", 0))
	})
	checkClaim(t, obs.Conn, actortest.Parts("t", 0)[0], sid, "a")
	// The claim on t:1 survived in the resumed session and is no longer
	// wanted: it must be released, or its next owner waits as long as
	// this session lives.
	if _, stat, err := obs.Conn.Get(claimPath(actortest.Parts("t", 1)[0])); !errors.Is(err, zk.ErrNoNode) {
		owner := int64(0)
		if stat != nil {
			owner = stat.EphemeralOwner
		}
		t.Errorf("claim t:1 read: %v, owner %#x; want it released", err, owner)
	}
}

// lostReplyConn, while lose reports true for a path, creates the node but
// answers as if the connection had dropped before the reply, and fails
// every read of it the same way: the claimer cannot learn the outcome.
type lostReplyConn struct {
	zksession.Conn
	lose func(path string) bool
	lost chan<- struct{} // signalled (without blocking) on every lost reply
}

func (c lostReplyConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	got, err := c.Conn.Create(p, data, flags, acl)
	if err == nil && c.lose(p) {
		c.signal()
		return "", zk.ErrConnectionClosed
	}
	return got, err
}

// Multi loses the reply of a multi-operation that creates such a path.
func (c lostReplyConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	res, err := c.Conn.Multi(ops...)
	for _, op := range ops {
		if r, ok := op.(*zk.CreateRequest); ok && err == nil && c.lose(r.Path) {
			c.signal()
			return nil, zk.ErrConnectionClosed
		}
	}
	return res, err
}

func (c lostReplyConn) signal() {
	select {
	case c.lost <- struct{}{}:
	default:
	}
}

func (c lostReplyConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if c.lose(p) {
		return false, nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.ExistsW(p)
}

func (c lostReplyConn) Get(p string) ([]byte, *zk.Stat, error) {
	if c.lose(p) {
		return nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.Get(p)
}

// A claim created by a request whose reply was lost is the session's even
// though the claimer never learned it; when the partition is no longer
// wanted it must be released, or its next owner waits as long as the
// session lives. (Found by TestScaleThousandMembers: one partition stayed
// unowned behind such a claim.)
func TestClaimsUnknownCreateReleasedWhenNoLongerWanted(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	t0, t1 := actortest.Parts("t", 0), actortest.Parts("t", 1)
	var lose atomic.Bool
	lose.Store(true)
	lost := make(chan struct{}, 1)
	a := startClaimerWith(t, []string{srv.Addr()}, "a", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return lostReplyConn{Conn: conn, lost: lost, lose: func(p string) bool {
			return p == claimPath(t1[0]) && lose.Load()
		}}
	}, nil)
	a.want(append(t0, t1...)...)
	select {
	case <-lost:
	case <-time.After(claimWait):
		t.Fatal("the claim on t:1 was never created")
	}
	checkClaim(t, obs.Conn, t1[0], a.st.SessionID, "a")
	// The rebalance actor moves t:1 elsewhere before the claimer learns
	// what became of its create; then the connection works again.
	d := a.want(t0...)
	lose.Store(false)
	a.waitHeld(holds(d, t0))
	zktest.WaitGone(t, obs.Conn, claimPath(t1[0]), claimWait)
}

// Claims wanted together are created a hundred to a multi-operation; in a
// group where none exists yet, the first also creates the owners node.
// Claims held by another session fail their batch and are then watched one
// at a time, at the cost of one more request per batch; when they are
// released, they are created in batches again.
func TestClaimsCreatedInBatches(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	ids := make([]int32, 250)
	for i := range ids {
		ids[i] = int32(i)
	}
	want := actortest.Parts("t", ids...)

	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	a.waitSession("up", func(st zksession.State) bool { return st.Status == session.Up })
	before := a.requests.Load()
	a.waitHeld(holds(a.want(want...), want))
	// Three batches that find no owners node, the node and its parents
	// created one level at a time, the three batches again.
	if n := a.requests.Load() - before; n > 16 {
		t.Errorf("claiming %d partitions in a new group took %d requests, want at most 16", len(want), n)
	}
	kids, _, err := obs.Conn.Children(claimPaths.Owners())
	if err != nil || len(kids) != len(want) {
		t.Fatalf("owners has %d children (%v), want %d", len(kids), err, len(want))
	}
	for _, p := range want {
		checkClaim(t, obs.Conn, p, a.st.SessionID, "a")
	}

	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, noCheck)
	b.waitSession("up", func(st zksession.State) bool { return st.Status == session.Up })
	before = b.requests.Load()
	db := b.want(want...)
	b.waitHeld(holds(db, nil))
	// Held comes before the watches: what the first batches took is
	// reported before the claims held by others are looked at.
	waitWatched(t, srv.Addr(), b.st.SessionID, len(want))
	if n, most := b.requests.Load()-before, int64(3+len(want)+1); n > most {
		t.Errorf("waiting for %d claims of another session took %d requests, want at most %d (a failed batch of each hundred, then a watch of each hold record, and of the holder's member node)", len(want), n, most)
	}
	// Releases read each claim, then delete a hundred to a multi-operation.
	// The watches fire about a hundred at a time, and b claims what has
	// fired in batches, not one attempt per watch.
	before, waited := a.requests.Load(), b.requests.Load()
	a.waitHeld(holds(a.want(), nil))
	if n, most := a.requests.Load()-before, int64(len(want)+3); n > most {
		t.Errorf("releasing %d claims took %d requests, want at most %d (a read each, a batch of deletes for each hundred)", len(want), n, most)
	}
	b.waitHeld(holds(db, want))
	t.Logf("b took them over in %d requests", b.requests.Load()-waited)
	if n, most := b.requests.Load()-waited, int64(len(want)/4); n > most {
		t.Errorf("taking over %d released claims took %d requests, want at most %d (a batch of creates per burst of watches)", len(want), n, most)
	}
	for _, p := range want {
		checkClaim(t, obs.Conn, p, b.st.SessionID, "b")
	}
}

// Claims that vanished before their release (an operator deleted them)
// are simply no longer held: there is nothing of ours left to delete.
// (Found by TestChaos: a release with nothing to delete crashed the batch
// code.)
func TestClaimsReleaseOfVanishedClaims(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a := startClaimer(t, []string{srv.Addr()}, "a", 4*time.Second)
	both := actortest.Parts("t", 0, 1)
	a.waitHeld(holds(a.want(both...), both))
	for _, p := range both {
		if err := obs.Conn.Delete(claimPath(p), -1); err != nil {
			t.Fatal(err)
		}
	}
	a.waitHeld(holds(a.want(), nil))
	a.stop() // reports a crashed actor
}

// lookBlockingConn holds every ExistsW until open is closed: the looks at
// claims held by another session never return before then.
type lookBlockingConn struct {
	zksession.Conn
	open <-chan struct{}
}

func (c lookBlockingConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	<-c.open
	return c.Conn.ExistsW(p)
}

// A member that finds most of what it wants held by others reports what
// its first batches of creates took before it looks at the others, one
// request each: a member joining a large group starts without waiting for
// them. (Before, Held came only after every look, seconds at 100,000
// partitions, and Start waited for it.)
func TestClaimsHeldReportedBeforeTheLooks(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	ids := make([]int32, 250)
	for i := range ids {
		ids[i] = int32(i)
	}
	taken, free := actortest.Parts("t", ids...), actortest.Parts("a", ids[:200]...) // "a" sorts first: two full batches
	a := startClaimer(t, servers, "a", 4*time.Second)
	a.waitHeld(holds(a.want(taken...), taken))

	open := make(chan struct{})
	b := startClaimerWith(t, servers, "b", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return lookBlockingConn{Conn: conn, open: open}
	}, nil)
	var once sync.Once
	unblock := func() { once.Do(func() { close(open) }) }
	t.Cleanup(unblock) // before b stops, should the wait fail
	db := b.want(append(slices.Clone(free), taken...)...)
	b.waitHeld(holds(db, free)) // while every look waits
	unblock()
	waitWatched(t, srv.Addr(), b.st.SessionID, len(taken))
	a.waitHeld(holds(a.want(), nil))
	b.waitHeld(holds(db, db.Partitions))
}

// A member taking over more claims than groupLooksAbove looks at one
// claim of each failed batch, the one it failed on, and waits on that
// claim's watch with the rest of the batch; when the holder releases the
// batch, it is claimed in one go. (Before, each claim was looked at with
// a watch of its own: 1,500 requests here, 50,000 for a member joining a
// group of 100,000 partitions.)
func TestClaimsBatchWaitsOnTheClaimItFailedOn(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	ids := make([]int32, 1500)
	for i := range ids {
		ids[i] = int32(i)
	}
	want := actortest.Parts("t", ids...)
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	a.waitHeld(holds(a.want(want...), want))

	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, noCheck)
	before := b.requests.Load()
	db := b.want(want...)
	b.waitHeld(holds(db, nil))
	waitWatched(t, srv.Addr(), b.st.SessionID, 15)
	// And one read of the owners node, holding nothing, for the proof that
	// spares reading the claims when they are released (claims_proof.go),
	// and one of the holder's member node, with a watch (holds.go).
	if n := b.requests.Load() - before; n > 2*15+2 {
		t.Errorf("waiting for %d claims of another session took %d requests, want at most 32 (a failed batch and a watch for each hundred, a read of the owners node and of the holder's member node)", len(want), n)
	}
	waited := b.requests.Load()
	a.waitHeld(holds(a.want(), nil))
	b.waitHeld(holds(db, want))
	if n := b.requests.Load() - waited; n > 2*15 {
		t.Errorf("taking over %d released claims took %d requests, want at most 30", len(want), n)
	}
	obs := actortest.Observe(t, servers, claimWait)
	for _, p := range want[:3] {
		checkClaim(t, obs.Conn, p, b.st.SessionID, "b")
	}
}

// A batch waits on the claim it failed on for at most groupWait: the
// others of the batch may be free, or held by another member, and are
// then looked at one by one.
func TestClaimsBatchWaitEnds(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	ids := make([]int32, 1100)
	for i := range ids {
		ids[i] = int32(i)
	}
	want := actortest.Parts("t", ids...)
	a := startClaimer(t, servers, "a", 4*time.Second)
	a.waitHeld(holds(a.want(want...), want))

	clock := actor.NewFakeClock(time.Now())
	b := startClaimerWith(t, servers, "b", 4*time.Second, nil, func(cfg *claims.Config) { cfg.Clock, cfg.CheckEvery = clock, -1 })
	db := b.want(want...)
	b.waitHeld(holds(db, nil))
	waitWatched(t, srv.Addr(), b.st.SessionID, 11)
	// a keeps t:0, the claim b's first batch failed on, and releases the
	// rest: b's other batches follow their watches; t:1 to t:99 wait.
	a.waitHeld(holds(a.want(want[0]), want[:1]))
	b.waitHeld(holds(db, want[100:]))
	clock.Advance(10 * time.Second) // groupWait
	b.waitHeld(holds(db, want[1:]))
}
