package members_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

// The members actor against a real ZooKeeper: each member is a session
// and an Actor in one actor.Group.

// wait bounds every wait for the actors; generous for a loaded machine.
const wait = 10 * time.Second

var paths = zkpath.Group{Root: "/zkalloc", Group: "members"}

// member runs a session and a members actor.
type member struct {
	t     *testing.T
	name  string
	m     *members.Actor
	run   *actortest.Running // the group of the two; a test that expects it to fail calls run.MayFail
	probe *actor.Latest[zksession.State]
	st    zksession.State // the latest state taken from probe
	last  membership.View // the latest view taken
}

func startMember(t *testing.T, servers []string, name string, info membership.Info, timeout time.Duration) *member {
	t.Helper()
	return startMemberWrapped(t, servers, name, info, timeout, nil, nil)
}

// startMemberWrapped is startMember with the session's connection wrapped
// by wrap, and the membership's Config changed by configure, each if it is
// not nil.
func startMemberWrapped(t *testing.T, servers []string, name string, info membership.Info, timeout time.Duration, wrap func(zksession.Conn) zksession.Conn, configure func(*members.Config)) *member {
	t.Helper()
	m := &member{t: t, name: name}
	m.run, m.probe = actortest.StartWithSession(t, zksession.Config{Servers: servers, Timeout: timeout, WrapConn: wrap}, name,
		func(sub *actor.Latest[zksession.State]) actor.Actor {
			cfg := members.Config{Paths: paths, Member: name, Info: info, Session: sub}
			if configure != nil {
				configure(&cfg)
			}
			m.m = members.New(testConfig(cfg))
			return m.m
		})
	return m
}

// testConfig returns cfg with the fields a test leaves out filled in, as
// the allocator would fill them: world-all ACL, a 30 s Resync, a Logger
// that discards, the real clock. The actor has no defaults of its own.
func testConfig(cfg members.Config) members.Config {
	if len(cfg.ACL) == 0 {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	if cfg.Resync == 0 {
		cfg.Resync = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	return cfg
}

// waitSession waits until a published session state satisfies ok.
func (m *member) waitSession(what string, ok func(zksession.State) bool) zksession.State {
	m.t.Helper()
	return actortest.Await(m.t, m.probe, &m.st, wait, m.name+": "+what+" session", ok)
}

// waitView waits until a view satisfies ok.
func (m *member) waitView(what string, ok func(membership.View) bool) membership.View {
	m.t.Helper()
	return actortest.AwaitChan(m.t, m.m.Views(), &m.last, wait, m.name+": view "+what, ok)
}

// listing is the condition "the view lists exactly names".
func listing(names ...string) (string, func(membership.View) bool) {
	return "of " + strings.Join(names, ","), func(v membership.View) bool { return slices.Equal(v.Members, names) }
}

// checkNode checks that name's member node is ephemeral, owned by owner,
// and holds info, and returns its stat.
func checkNode(t *testing.T, conn zksession.Conn, name string, owner int64, info membership.Info) *zk.Stat {
	t.Helper()
	data := info.Data()
	got, stat, err := conn.Get(paths.Member(name))
	if err != nil {
		t.Fatalf("member node %s: %v", name, err)
	}
	if stat.EphemeralOwner == 0 || stat.EphemeralOwner != owner || !slices.Equal(got, data) {
		t.Errorf("member node %s: owner %#x, data %q; want ephemeral of %#x with %q", name, stat.EphemeralOwner, got, owner, data)
	}
	return stat
}

// pzxid reads the members node's pzxid.
func pzxid(t *testing.T, conn zksession.Conn) int64 {
	t.Helper()
	return pzxidOf(t, conn, paths.Members())
}

// pzxidOf reads the pzxid of the node at p.
func pzxidOf(t *testing.T, conn zksession.Conn, p string) int64 {
	t.Helper()
	_, stat, err := conn.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	return stat.Pzxid
}

func TestMembershipRegisters(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	info1, info2 := membership.Info{Host: "h1", PID: 1}, membership.Info{Host: "h2", PID: 2}
	m2 := startMember(t, servers, "m2", info2, 4*time.Second)
	m1 := startMember(t, servers, "m1", info1, 4*time.Second)
	m1.waitSession("up", actortest.IsUp)
	m2.waitSession("up", actortest.IsUp)
	v1, v2 := m1.waitView(listing("m1", "m2")), m2.waitView(listing("m1", "m2"))

	checkNode(t, obs.Conn, "m1", m1.st.SessionID, info1)
	checkNode(t, obs.Conn, "m2", m2.st.SessionID, info2)
	z := pzxid(t, obs.Conn)
	for _, c := range []struct {
		m *member
		v membership.View
	}{{m1, v1}, {m2, v2}} {
		if c.v.Zxid != z || c.v.SessionID != c.m.st.SessionID || c.v.Reconnects != c.m.st.Reconnects {
			t.Errorf("%s: view %+v; want zxid %d (the members pzxid), session %#x, reconnects %d",
				c.m.name, c.v, z, c.m.st.SessionID, c.m.st.Reconnects)
		}
	}
}

// A member whose name is held by another live session before it first
// registers waits for that session to end: here a crashed earlier run,
// cut off without closing its session (as by kill -9). It names the
// holder once, in the log and in Waiting, and registers once the server
// has expired the holder's session, within its timeout.
func TestMembershipWaitsForTheNameToBeFree(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, wait)
	const timeout = 2 * time.Second
	info := membership.Info{Host: "h1", PID: 1, Started: "2026-01-01T00:00:00Z"}
	first := startMember(t, proxy.Addrs(), "m", info, timeout)
	first.run.MayFail() // back, it finds its name taken: ErrDuplicateMember
	held := first.waitSession("up", actortest.IsUp).SessionID
	first.waitView(listing("m"))

	logs := actortest.NewLogs()
	info2 := membership.Info{Host: "h2", PID: 2}
	second := startMemberWrapped(t, []string{srv.Addr()}, "m", info2, timeout, nil, func(cfg *members.Config) {
		cfg.Logger = slog.New(logs)
	})
	second.waitSession("up", actortest.IsUp)
	rec := logs.Next(t, wait)
	if rec.Attrs["holder"] != fmt.Sprintf("%#x", held) || rec.Attrs["host"] != "h1" || rec.Attrs["pid"] != "1" || rec.Attrs["timeout"] != timeout.String() {
		t.Errorf("log %q %v; want the holder %#x, host h1, pid 1 and the timeout %v", rec.Msg, rec.Attrs, held, timeout)
	}
	waiting := second.m.Waiting()
	if !errors.Is(waiting, membership.ErrDuplicateMember) || !strings.Contains(waiting.Error(), "host h1, pid 1") || !strings.Contains(waiting.Error(), fmt.Sprintf("%#x", held)) {
		t.Errorf("Waiting() = %v; want ErrDuplicateMember naming session %#x, host h1, pid 1", waiting, held)
	}
	select {
	case <-second.run.Done():
		t.Fatalf("Run returned while the name was held: %v", second.run.Err())
	default:
	}

	// The first's process dies without closing its session: the second
	// registers once the server has expired it.
	cut := time.Now()
	proxy.Blackhole(true)
	st := second.st
	what, listed := listing("m")
	second.waitView(what+" in the second's session", func(v membership.View) bool { return v.SessionID == st.SessionID && listed(v) })
	took := time.Since(cut)
	t.Logf("registered %v after the holder was cut off (session timeout %v)", took, timeout)
	if took > 2*timeout+time.Second {
		t.Errorf("registered %v after the holder was cut off; want within its session timeout %v and a margin", took, timeout)
	}
	checkNode(t, obs.Conn, "m", st.SessionID, info2)
	if w := second.m.Waiting(); w != nil {
		t.Errorf("Waiting() = %v once registered, want nil", w)
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d warnings, want the holder named once", n)
	}
	proxy.Blackhole(false) // the first stops at once
}

// A node of the member's name that no session owns (persistent) never
// goes away by itself: the member refuses it at once.
func TestMembershipRefusesAPersistentNode(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	if err := zkpath.Ensure(obs.Conn, paths.Members(), zk.WorldACL(zk.PermAll)...); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Conn.Create(paths.Member("m"), []byte(`{"host":"by hand"}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m := startMember(t, servers, "m", membership.Info{Host: "h1"}, 4*time.Second)
	m.run.MayFail()
	select {
	case <-m.run.Done():
	case <-time.After(wait):
		t.Fatalf("the member still runs %v after finding a persistent node of its name", wait)
	}
	if !errors.Is(m.run.Err(), membership.ErrDuplicateMember) || !strings.Contains(m.run.Err().Error(), "not a member's") {
		t.Fatalf("Run = %v, want ErrDuplicateMember saying the node is not a member's", m.run.Err())
	}
}

func TestMembershipFollowsTheList(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	info := membership.Info{Host: "h1"}
	m := startMember(t, servers, "m", info, 4*time.Second)
	m.waitSession("up", actortest.IsUp)
	m.waitView(listing("m"))
	before := checkNode(t, obs.Conn, "m", m.st.SessionID, info)

	// Another session's members come and go.
	if _, err := obs.Conn.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if v := m.waitView(listing("m", "x")); v.Zxid != pzxid(t, obs.Conn) {
		t.Errorf("view zxid %d, want the members pzxid %d", v.Zxid, pzxid(t, obs.Conn))
	}
	if err := obs.Conn.Delete(paths.Member("x"), -1); err != nil {
		t.Fatal(err)
	}
	v := m.waitView(listing("m"))
	if z := pzxid(t, obs.Conn); v.Zxid != z {
		t.Errorf("view zxid %d, want the members pzxid %d", v.Zxid, z)
	}

	// Our own node is deleted behind our back: the member registers again.
	if err := obs.Conn.Delete(paths.Member("m"), -1); err != nil {
		t.Fatal(err)
	}
	what, listed := listing("m")
	again := m.waitView(what+" after the node was deleted", func(w membership.View) bool { return w.Zxid > v.Zxid && listed(w) })
	after := checkNode(t, obs.Conn, "m", m.st.SessionID, info)
	if after.Czxid <= before.Czxid {
		t.Errorf("member node czxid %d, was %d; want it created again", after.Czxid, before.Czxid)
	}
	if z := pzxid(t, obs.Conn); again.Zxid != z {
		t.Errorf("view zxid %d, want the members pzxid %d", again.Zxid, z)
	}
}

func TestMembershipRegistersAgainAfterExpiry(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	obs := actortest.Observe(t, []string{srv.Addr()}, wait)
	const timeout = 2 * time.Second
	info := membership.Info{Host: "h1"}
	m := startMember(t, proxy.Addrs(), "m", info, timeout)
	old := m.waitSession("up", actortest.IsUp).SessionID
	m.waitView(listing("m"))

	// Cut the member off until the server expires its session.
	proxy.Blackhole(true)
	zktest.WaitGone(t, obs.Conn, paths.Member("m"), 4*timeout)
	proxy.Blackhole(false)
	st := m.waitSession("up in a new session", func(st zksession.State) bool { return actortest.IsUp(st) && st.SessionID != old })
	what, listed := listing("m")
	m.waitView(what+" in the new session", func(v membership.View) bool { return v.SessionID == st.SessionID && listed(v) })
	checkNode(t, obs.Conn, "m", st.SessionID, info)
}

// TestMembershipStopsWhenItsNameIsTaken: our node is deleted and, in the
// same transaction, another session creates one of the same name. The
// member must notice (its own node is watched) and stop rather than share
// the name.
func TestMembershipStopsWhenItsNameIsTaken(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	m := startMember(t, servers, "m", membership.Info{}, 4*time.Second)
	m.waitSession("up", actortest.IsUp)
	m.waitView(listing("m"))
	takeOver(t, servers, m)
}

// flakyOwnWatch fails the first watch of the member's own node as if the
// connection had dropped, and signals watched when one has been armed.
type flakyOwnWatch struct {
	zksession.Conn
	failed  *atomic.Bool
	watched chan<- struct{}
}

func (c flakyOwnWatch) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if p != paths.Member("m") {
		return c.Conn.ExistsW(p)
	}
	if c.failed.CompareAndSwap(false, true) {
		return false, nil, nil, zk.ErrConnectionClosed
	}
	exists, stat, w, err := c.Conn.ExistsW(p)
	if err == nil {
		select {
		case c.watched <- struct{}{}:
		default:
		}
	}
	return exists, stat, w, err
}

// The watch on the member's own node goes out with the member list; if
// it fails while the list succeeds, it is retried, or a takeover of the
// name would go unnoticed.
func TestMembershipRetriesItsOwnWatch(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	var failed atomic.Bool
	watched := make(chan struct{}, 1)
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return flakyOwnWatch{Conn: c, failed: &failed, watched: watched}
	}, nil)
	m.waitSession("up", actortest.IsUp)
	select {
	case <-watched:
	case <-time.After(wait):
		t.Fatalf("the member's own node was not watched within %v after the first watch failed", wait)
	}
	if !failed.Load() {
		t.Fatal("the first watch did not fail; the test proves nothing")
	}
	takeOver(t, servers, m)
}

// takeOver replaces m's node by another session's and checks that m stops
// with ErrDuplicateMember.
func takeOver(t *testing.T, servers []string, m *member) {
	t.Helper()
	obs := actortest.Observe(t, servers, wait)
	m.run.MayFail()

	if _, err := obs.Conn.Multi(
		&zk.DeleteRequest{Path: paths.Member("m"), Version: -1},
		&zk.CreateRequest{Path: paths.Member("m"), Data: []byte(`{"host":"usurper"}`), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.run.Done():
	case <-time.After(wait):
		t.Fatalf("the member still runs %v after its name was taken", wait)
	}
	if !errors.Is(m.run.Err(), membership.ErrDuplicateMember) || !strings.Contains(m.run.Err().Error(), "usurper") {
		t.Fatalf("Run = %v, want ErrDuplicateMember naming the usurper", m.run.Err())
	}
}

// TestMembershipRefusesAnotherStrategy: before it first registers, a
// member reads the first few other members' nodes and refuses to join if
// one names another strategy; nodes that name none, or the same, pass.
func TestMembershipRefusesAnotherStrategy(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	old := startMember(t, servers, "a-old", membership.Info{Host: "h0", PID: 1}, 4*time.Second) // an older version: no strategy
	old.waitView(listing("a-old"))
	same := startMember(t, servers, "b-same", membership.Info{Host: "h1", PID: 3, Strategy: "balanced"}, 4*time.Second)
	same.waitView(listing("a-old", "b-same"))

	other := startMember(t, servers, "c-other", membership.Info{Host: "h2", PID: 2, Strategy: "range"}, 4*time.Second)
	other.run.MayFail()
	select {
	case <-other.run.Done():
	case <-time.After(wait):
		t.Fatalf("a member with another strategy still runs after %v", wait)
	}
	if !errors.Is(other.run.Err(), membership.ErrStrategyMismatch) || !strings.Contains(other.run.Err().Error(), `member "b-same" runs strategy "balanced" (host h1, pid 3`) {
		t.Fatalf("Run with another strategy = %v, want ErrStrategyMismatch naming b-same", other.run.Err())
	}
	if exists, _, err := obs.Conn.Exists(paths.Member("c-other")); err != nil || exists {
		t.Errorf("c-other's node exists = %v (%v); it must not join", exists, err)
	}
	same.waitView(listing("a-old", "b-same"))
}
