package members_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// draining is the condition "the view lists exactly names as drained,
// and is newer than zxid".
func draining(after int64, names ...string) (string, func(membership.View) bool) {
	return fmt.Sprintf("draining %q after zxid %#x", names, after), func(v membership.View) bool {
		return v.Drained != nil && slices.Equal(v.Drained, names) && v.Zxid > after
	}
}

// TestMembershipDrainMarks: with Config.Drained, the actor makes
// drained/ at registration, and its views carry the drain marks made and
// deleted from outside, at a zxid that covers them; a mark that is not a
// member's name is left out and logged once; a mark for a name that is
// not live stays; drained/ deleted under the actor is made again, and
// watched.
func TestMembershipDrainMarks(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	logs := actortest.NewLogs()
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, nil, func(c *members.Config) {
		c.Drained = true
		c.Logger = slog.New(logs)
	})
	v := m.waitView(draining(0))
	if ok, _, err := obs.Exists(paths.Drained()); !ok || err != nil {
		t.Fatalf("drained/ exists: %v, %v; want it made at registration", ok, err)
	}

	acl := zk.WorldACL(zk.PermAll)
	long := strings.Repeat("l", rebalance.MaxNameLen+1)
	for _, name := range []string{"b", long} {
		if _, err := obs.Create(paths.DrainedMember(name), nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	// A view at or past the marks' pzxid: one that covers them.
	v = m.waitView(draining(pzxidOf(t, obs, paths.Drained())-1, "b"))
	if _, err := obs.Create(paths.DrainedMember("m"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	v = m.waitView(draining(v.Zxid, "b", "m"))
	if r := logs.Next(t, wait); !strings.Contains(r.Msg, "drain mark") || r.Attrs["path"] != paths.DrainedMember(long[:64]+"...(250 bytes)") {
		t.Errorf("log %q %v; want the long mark's path, cut short", r.Msg, r.Attrs)
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d logs; want the long mark logged once", n)
	}

	for _, name := range []string{"b", "m", long} {
		if err := obs.Delete(paths.DrainedMember(name), -1); err != nil {
			t.Fatal(err)
		}
	}
	v = m.waitView(draining(v.Zxid))

	// drained/ deleted under the actor: made again, and watched.
	if err := obs.Delete(paths.Drained(), -1); err != nil {
		t.Fatal(err)
	}
	v = m.waitView(draining(v.Zxid))
	if ok, _, err := obs.Exists(paths.Drained()); !ok || err != nil {
		t.Fatalf("drained/ exists: %v, %v; want it made again", ok, err)
	}
	if _, err := obs.Create(paths.DrainedMember("b"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	m.waitView(draining(v.Zxid, "b"))
}

// TestMembershipNoDrainMarksByDefault: without Config.Drained the actor
// neither makes drained/ nor reads it: its views have no Drained, even
// with a mark there.
func TestMembershipNoDrainMarksByDefault(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	m := startMember(t, servers, "m", membership.Info{}, 4*time.Second)
	if v := m.waitView(listing("m")); v.Drained != nil {
		t.Errorf("drained %q without Config.Drained", v.Drained)
	}
	if ok, _, err := obs.Exists(paths.Drained()); ok || err != nil {
		t.Errorf("drained/ exists (%v) without Config.Drained", err)
	}
	if err := zkpath.Ensure(obs, paths.DrainedMember("m")); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if v := m.waitView(listing("m", "x")); v.Drained != nil {
		t.Errorf("drained %q without Config.Drained", v.Drained)
	}
}

// holdingMarks, once armed, lets the actor's next listing of the drain
// marks through, then holds its listing of the members, pipelined with
// it, until release is closed, reporting on held: the drain marks are
// listed before what the test writes on held, the members after.
type holdingMarks struct {
	zksession.Conn
	marks, members *atomic.Bool  // armed
	marksListed    chan struct{} // closed once the armed listing of the marks has returned
	held           chan<- struct{}
	release        <-chan struct{}
}

func (c holdingMarks) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	switch {
	case path == paths.Drained() && c.marks.CompareAndSwap(true, false):
		names, stat, w, err := c.Conn.ChildrenW(path)
		close(c.marksListed)
		return names, stat, w, err
	case path == paths.Members() && c.members.CompareAndSwap(true, false):
		<-c.marksListed
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.ChildrenW(path)
}

// TestMembershipDrainMarksAndListAreOneView: the drain marks are listed
// alongside the members, and the view's zxid is the newest of their
// pzxids. b is drained, then x joins, after the marks are listed but
// before the members are: a view of x without b's mark, at x's zxid,
// would be a group that never was. The marks' watch fired before the
// member list's reply came, so the reading is made again, and one view
// is published at that zxid, with both. Without the marks' watch in the
// view's Changed, the actor published x without b at x's zxid, then with
// b at the same zxid: two views, one zxid.
func TestMembershipDrainMarksAndListAreOneView(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	held, release := make(chan struct{}, 1), make(chan struct{})
	marks, list := new(atomic.Bool), new(atomic.Bool)
	log := &published{}
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return holdingMarks{Conn: c, marks: marks, members: list, marksListed: make(chan struct{}), held: held, release: release}
	}, func(c *members.Config) { c.Drained = true; c.Logger = slog.New(log) })
	v := m.waitView(draining(0))

	// A mark makes the actor list again.
	marks.Store(true)
	list.Store(true)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Create(paths.DrainedMember("y"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(wait):
		t.Fatal("the actor did not list the members")
	}
	if _, err := obs.Create(paths.DrainedMember("b"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Member("x"), nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	zx := pzxid(t, obs)
	close(release)
	what, ok := draining(v.Zxid, "b", "y")
	v = m.waitView(what+" with x", func(v membership.View) bool { return ok(v) && slices.Equal(v.Members, []string{"m", "x"}) })
	if v.Zxid != zx {
		t.Errorf("view zxid %#x, want x's %#x", v.Zxid, zx)
	}
	if at, all := log.at(v.Zxid); len(at) != 1 {
		t.Errorf("published %d views at zxid %#x, want 1: %s", len(at), v.Zxid, fmt.Sprint(all))
	}
}

// TestMembershipListSeatsOnly: with Config.ListSeats and no Seats (the
// sticky strategy without DepartureDelay), the actor makes seats/ at
// registration, keeps no seat of its own, and its views list the
// group's seats at a zxid that covers them: the zxid a member with
// DepartureDelay reads for the same group.
func TestMembershipListSeatsOnly(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, nil, func(c *members.Config) { c.ListSeats = true })
	m.waitView("m listed", func(v membership.View) bool { return slices.Contains(v.Members, "m") })
	if ok, _, err := obs.Exists(paths.Seats()); !ok || err != nil {
		t.Fatalf("seats/ exists: %v, %v; want it made at registration", ok, err)
	}
	if _, err := obs.Create(paths.Seat("away"), []byte("away"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stat, err := obs.Get(paths.Seats())
	if err != nil {
		t.Fatal(err)
	}
	v := m.waitView("the away seat listed", func(v membership.View) bool { return len(v.Seats) == 1 && v.Seats[0].Name == "away" })
	if v.Zxid < stat.Pzxid {
		t.Errorf("view zxid %#x, below the seats' pzxid %#x", v.Zxid, stat.Pzxid)
	}
	if ok, _, err := obs.Exists(paths.Seat("m")); ok || err != nil {
		t.Errorf("m's seat exists: %v, %v; want none without Seats", ok, err)
	}
}

// listCounting counts the actor's listings of each path.
type listCounting struct {
	zksession.Conn
	mu    *sync.Mutex
	lists map[string]int
}

func (c listCounting) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c.mu.Lock()
	c.lists[path]++
	c.mu.Unlock()
	return c.Conn.ChildrenW(path)
}

// TestMembershipJoinListsOnlyTheMembers: a join or a leave lists the
// members again, not the seats nor the drain marks, whose watches did
// not fire; a drain mark lists the marks again, not the seats. (Before,
// every reading listed the three: two requests more per member on every
// change of a sticky group.)
func TestMembershipJoinListsOnlyTheMembers(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	var mu sync.Mutex
	lists := map[string]int{}
	counts := func() (members, seats, drained int) {
		mu.Lock()
		defer mu.Unlock()
		return lists[paths.Members()], lists[paths.Seats()], lists[paths.Drained()]
	}
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return listCounting{Conn: c, mu: &mu, lists: lists}
	}, func(c *members.Config) { c.Drained = true; c.ListSeats = true })
	v := m.waitView(draining(0))
	mb, sb, db := counts()

	if _, err := obs.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	v = m.waitView("x joined", func(v membership.View) bool { return slices.Equal(v.Members, []string{"m", "x"}) })
	if err := obs.Delete(paths.Member("x"), -1); err != nil {
		t.Fatal(err)
	}
	v = m.waitView("x left", func(v membership.View) bool { return slices.Equal(v.Members, []string{"m"}) && v.Zxid > 0 })
	ma, sa, da := counts()
	if ma-mb != 2 || sa != sb || da != db {
		t.Errorf("a join and a leave listed the members %d times, the seats %d, the drain marks %d; want 2, 0, 0", ma-mb, sa-sb, da-db)
	}

	if _, err := obs.Create(paths.DrainedMember("m"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m.waitView(draining(v.Zxid, "m"))
	if mc, sc, dc := counts(); dc-da != 1 || sc != sa || mc-ma != 1 {
		t.Errorf("a drain mark listed the members %d times, the seats %d, the drain marks %d; want 1, 0, 1", mc-ma, sc-sa, dc-da)
	}
}

// parentsBeforePeers holds the actor's first listing of the members, the
// check of its peers, until it has asked for drained/ to be made, or
// for a while; it reports in together whether the two were in flight
// together.
type parentsBeforePeers struct {
	zksession.Conn
	asked    chan struct{} // closed on the first create of drained/
	once     *sync.Once
	checked  *atomic.Bool
	together *atomic.Bool
}

func (c parentsBeforePeers) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if p == paths.Drained() {
		c.once.Do(func() { close(c.asked) })
	}
	return c.Conn.Create(p, data, flags, acl)
}

func (c parentsBeforePeers) Children(p string) ([]string, *zk.Stat, error) {
	if p == paths.Members() && c.checked.CompareAndSwap(false, true) {
		select {
		case <-c.asked:
			c.together.Store(true)
		case <-time.After(time.Second):
		}
	}
	return c.Conn.Children(p)
}

// TestMembershipParentsMadeAlongsideThePeerCheck: a newcomer makes
// drained/ (and seats/) in the same round trip as its check of the
// peers' strategy, not after it: one round trip fewer before its node.
func TestMembershipParentsMadeAlongsideThePeerCheck(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	together := new(atomic.Bool)
	m := startMemberWrapped(t, servers, "m", membership.Info{Strategy: "sticky"}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return parentsBeforePeers{Conn: c, asked: make(chan struct{}), once: new(sync.Once), checked: new(atomic.Bool), together: together}
	}, func(c *members.Config) { c.Drained = true; c.ListSeats = true })
	m.waitView(draining(0))
	if !together.Load() {
		t.Error("the check of the peers went before drained/ was asked for, not alongside")
	}
}
