package members_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

// published keeps every view the actor publishes, as its debug log says
// ("zkalloc: member view", with the zxid and the number of members and
// of away seats): the views channel is latest-wins, and a reader may miss
// one. It is a slog.Handler, safe for concurrent use.
type published struct {
	mu    sync.Mutex
	views []viewLog
}

type viewLog struct {
	zxid          int64
	members, away int64
}

func (p *published) Enabled(context.Context, slog.Level) bool { return true }
func (p *published) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *published) WithGroup(string) slog.Handler            { return p }

func (p *published) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "zkalloc: member view" {
		return nil
	}
	var v viewLog
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "zxid":
			v.zxid = a.Value.Int64()
		case "members":
			v.members = a.Value.Int64()
		case "away":
			v.away = a.Value.Int64()
		}
		return true
	})
	p.mu.Lock()
	p.views = append(p.views, v)
	p.mu.Unlock()
	return nil
}

// at returns the views published with zxid, and every view.
func (p *published) at(zxid int64) (at, all []viewLog) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.views {
		if v.zxid == zxid {
			at = append(at, v)
		}
	}
	return at, append([]viewLog(nil), p.views...)
}

// holdingConn holds the actor's next Get of one path, once armed: it
// reports on held and waits for release before it sends the request.
type holdingConn struct {
	zksession.Conn
	path    string
	armed   *atomic.Bool
	held    chan<- struct{} // one slot
	release <-chan struct{}
}

func (c holdingConn) Get(path string) ([]byte, *zk.Stat, error) {
	if path == c.path && c.armed.CompareAndSwap(true, false) {
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.Get(path)
}

// TestMembershipViewIsWholeWhenANodeGoes plays the first race of issue
// 26's generations: b joins (zxid Zb) and leaves (Zd) while the actor,
// which has listed b at Zb, has not yet read b's node. Before the fix it
// published the list without b at Zb, the zxid at which the list held b
// (and another member, whose verdict on b was cached, listed it there).
// Now a reading with a node gone is made again, and the view without b
// carries Zd.
func TestMembershipViewIsWholeWhenANodeGoes(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	held, release := make(chan struct{}, 1), make(chan struct{})
	armed := new(atomic.Bool)
	log := &published{}
	m1 := startMemberWrapped(t, servers, "m1", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return holdingConn{Conn: c, path: paths.Member("b"), armed: armed, held: held, release: release}
	}, func(c *members.Config) { c.Logger = slog.New(log) })
	m1.waitView(listing("m1"))

	armed.Store(true)
	if _, err := obs.Conn.Create(paths.Member("b"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	zb := pzxid(t, obs.Conn)
	select {
	case <-held:
	case <-time.After(wait):
		t.Fatal("the actor did not read b's node")
	}
	if err := obs.Conn.Delete(paths.Member("b"), -1); err != nil {
		t.Fatal(err)
	}
	zd := pzxid(t, obs.Conn)
	close(release)
	m1.waitView("without b, at its deletion", func(v membership.View) bool { return v.Zxid == zd && len(v.Members) == 1 })
	if at, all := log.at(zb); len(at) > 0 {
		t.Errorf("published %+v at zxid %#x, when the list held b; all views: %+v", at, zb, all)
	}
}

// holdingSeats, once armed, holds the actor's next listing of the seats
// until release is closed, and reports on listed when its next listing
// of the members, pipelined with it, has returned: the members are
// listed before what the test writes on listed, the seats after.
type holdingSeats struct {
	zksession.Conn
	seats, members *atomic.Bool    // armed
	listed         chan<- struct{} // one slot
	release        <-chan struct{}
}

func (c holdingSeats) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	switch {
	case path == paths.Seats() && c.seats.CompareAndSwap(true, false):
		<-c.release
	case path == paths.Members() && c.members.CompareAndSwap(true, false):
		names, stat, w, err := c.Conn.ChildrenW(path)
		c.listed <- struct{}{}
		return names, stat, w, err
	}
	return c.Conn.ChildrenW(path)
}

// TestMembershipSeatsAndListAreOneView plays the second race: with
// seats, the member list and the seat list are read side by side, and
// the view's zxid is the newer of their pzxids. x joins (its member
// node, then its seat) after the member list is read but before the
// seats are. Before the fix the actor published x's seat as away at the
// seats' pzxid, when x was live, then x live at the same zxid: two views,
// one zxid. Now the reading is made again, as the member list's watch
// fired before the seats' reply came, and one view is published.
func TestMembershipSeatsAndListAreOneView(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	listed, release := make(chan struct{}, 1), make(chan struct{})
	seats, list := new(atomic.Bool), new(atomic.Bool)
	log := &published{}
	m1 := startMemberWrapped(t, servers, "m1", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return holdingSeats{Conn: c, seats: seats, members: list, listed: listed, release: release}
	}, func(c *members.Config) { c.Seats = true; c.Logger = slog.New(log) })
	m1.waitView(seated([]string{"m1"}, "m1"))

	// A seat without a member makes the actor list again.
	seats.Store(true)
	list.Store(true)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Conn.Create(paths.Seat("y"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	select {
	case <-listed:
	case <-time.After(wait):
		t.Fatal("the actor did not list the members")
	}
	if _, err := obs.Conn.Create(paths.Member("x"), nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Conn.Create(paths.Seat("x"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	close(release)
	v := m1.waitView(seated([]string{"m1", "x"}, "m1", "x", "y"))
	at, all := log.at(v.Zxid)
	if len(at) != 1 {
		t.Errorf("published %d views at zxid %#x, want 1: %s", len(at), v.Zxid, fmt.Sprint(all))
	}
}
