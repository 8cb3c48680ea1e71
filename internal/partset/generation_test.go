package partset_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// published keeps every view the set publishes, as its debug log says
// ("zkalloc: partition view", with the zxid and the number of
// partitions): the views channel is latest-wins, and a reader may miss
// one. It is a slog.Handler, safe for concurrent use.
type published struct {
	mu    sync.Mutex
	views []string // "zxid partitions"
}

func (p *published) Enabled(context.Context, slog.Level) bool { return true }
func (p *published) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *published) WithGroup(string) slog.Handler            { return p }

func (p *published) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "zkalloc: partition view" {
		return nil
	}
	var zxid, n string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "zxid":
			zxid = a.Value.String()
		case "partitions":
			n = a.Value.String()
		}
		return true
	})
	p.mu.Lock()
	p.views = append(p.views, zxid+" "+n)
	p.mu.Unlock()
	return nil
}

// twice returns the first zxid published with two different views, and
// both, or "" if there is none.
func (p *published) twice() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]string{}
	for _, v := range p.views {
		var zxid, n string
		fmt.Sscan(v, &zxid, &n)
		if old, ok := seen[zxid]; ok && old != n {
			return fmt.Sprintf("zxid %s with %s and with %s partitions (all views: %v)", zxid, old, n, p.views)
		}
		seen[zxid] = n
	}
	return ""
}

// holdingConn holds the set's next read of one node, once armed: it
// reports on held and waits for release before it sends the read.
type holdingConn struct {
	zksession.Conn
	path    string
	armed   *atomic.Bool
	held    chan<- struct{} // one slot
	release <-chan struct{}
}

func (c holdingConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if path == c.path && c.armed.CompareAndSwap(true, false) {
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.GetW(path)
}

// TestSetGenerationIdentifiesOneView plays the race of issue 26 step by
// step: one multi (zxid Z) writes topics a and b; the set, busy re-reading
// a for an earlier change when the multi lands, reads a at Z before it
// has taken b's watch. Before the fix it published a view with a new and
// b old at Z, then the whole change at Z again: two views, one zxid. Now
// a reading is published only once no watch armed by it has fired, so
// each view is the set as it was at its zxid.
func TestSetGenerationIdentifiesOneView(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second)
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	held, release := make(chan struct{}, 1), make(chan struct{})
	armed := new(atomic.Bool)
	log := &published{}
	m := startSetWith(t, []string{srv.Addr()}, paths, map[string][]int32{"a": {0}, "b": {0}}, func(c zksession.Conn) zksession.Conn {
		return holdingConn{Conn: c, path: paths.Topic("a"), armed: armed, held: held, release: release}
	}, func(cfg *partset.Config) { cfg.Logger = slog.New(log) })
	m.waitParts(append(actortest.Parts("a", 0), actortest.Parts("b", 0)...))

	// A change to a alone: the set's re-read of a is held.
	armed.Store(true)
	if _, err := obs.Conn.Set(paths.Topic("a"), []byte("0,5"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the set did not re-read a")
	}
	// One multi writes a and b while the read waits, then the read goes.
	if _, err := obs.Conn.Multi(
		&zk.SetDataRequest{Path: paths.Topic("a"), Data: []byte("0-1"), Version: -1},
		&zk.SetDataRequest{Path: paths.Topic("b"), Data: []byte("0-1"), Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	close(release)
	v := m.waitParts(append(actortest.Parts("a", 0, 1), actortest.Parts("b", 0, 1)...))
	if twice := log.twice(); twice != "" {
		t.Errorf("two views published with one zxid: %s", twice)
	}
	checkAt(t, obs.Conn, paths, v)
}

// TestSetViewsOfMultisAreWhole: many multis each write two topics (every
// fourth also creates one, which changes the list) while a member
// watches; no two different views carry the same zxid, and the last is
// the set as it is.
func TestSetViewsOfMultisAreWhole(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second)
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	log := &published{}
	m := startSetWith(t, []string{srv.Addr()}, paths, map[string][]int32{"a": {0}, "b": {0}}, nil,
		func(cfg *partset.Config) { cfg.Logger = slog.New(log) })
	m.waitParts(append(actortest.Parts("a", 0), actortest.Parts("b", 0)...))
	const rounds = 40
	var created []rebalance.Partition
	for i := 1; i <= rounds; i++ {
		data := []byte(fmt.Sprintf("0-%d", i))
		ops := []any{
			&zk.SetDataRequest{Path: paths.Topic("a"), Data: data, Version: -1},
			&zk.SetDataRequest{Path: paths.Topic("b"), Data: data, Version: -1},
		}
		if i%4 == 0 {
			topic := fmt.Sprintf("n%d", i)
			ops = append(ops, &zk.CreateRequest{Path: paths.Topic(topic), Data: []byte("0"), Acl: zk.WorldACL(zk.PermAll)})
			created = append(created, rebalance.Partition{Topic: topic, ID: 0})
		}
		if _, err := obs.Conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]int32, rounds+1)
	for i := range ids {
		ids[i] = int32(i)
	}
	want := append(append(actortest.Parts("a", ids...), actortest.Parts("b", ids...)...), created...)
	rebalance.Sort(want)
	v := m.waitParts(want)
	if twice := log.twice(); twice != "" {
		t.Errorf("two views published with one zxid: %s", twice)
	}
	checkAt(t, obs.Conn, paths, v)
}

// checkAt checks that v, the set's last view, carries the zxid of the
// newest change of the set as it is now.
func checkAt(t *testing.T, c zksession.Conn, paths zkpath.Group, v partitions.View) {
	t.Helper()
	if want := newest(t, c, paths); v.Zxid != want {
		t.Errorf("view at zxid %#x, want %#x, the newest change", v.Zxid, want)
	}
}

// newest returns the zxid of the newest change of the set as it is now.
func newest(t *testing.T, c zksession.Conn, paths zkpath.Group) int64 {
	t.Helper()
	names, stat, err := c.Children(paths.Partitions())
	if err != nil {
		t.Fatal(err)
	}
	zxid := stat.Pzxid
	for _, name := range names {
		_, st, err := c.Get(paths.Topic(name))
		if err != nil {
			t.Fatal(err)
		}
		zxid = max(zxid, st.Mzxid)
	}
	return zxid
}

// TestWatchFiresBeforeLaterReply checks what [partset]'s readings rest on
// (see Set.changedSince): once the client hands over a reply that shows
// a change, the channel of every watch that change fired is closed
// already, on the same connection. A client that delivered watch events
// later, on a goroutine of its own, would fail it.
func TestWatchFiresBeforeLaterReply(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	reader := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	writer := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/a", "/b"} {
		if _, err := writer.Create(p, []byte("0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		_, _, watch, err := reader.GetW("/b")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Multi(
			&zk.SetDataRequest{Path: "/a", Data: []byte("1"), Version: -1},
			&zk.SetDataRequest{Path: "/b", Data: []byte("1"), Version: -1},
		); err != nil {
			t.Fatal(err)
		}
		_, written, err := writer.Get("/a")
		if err != nil {
			t.Fatal(err)
		}
		_, stat, err := reader.Get("/a")
		if err != nil {
			t.Fatal(err)
		}
		if stat.Mzxid != written.Mzxid {
			t.Fatalf("round %d: read /a at mzxid %#x, want the multi's %#x", round, stat.Mzxid, written.Mzxid)
		}
		select {
		case <-watch:
		default:
			t.Fatalf("round %d: the reply shows the multi, but the watch on /b it fired is still open", round)
		}
	}
}

// churningConn writes topic b (through writer) before each read of a,
// and a before each read of b, while churn is set: the set its reader
// keeps finds a change in every reading.
type churningConn struct {
	zksession.Conn
	writer zksession.Conn
	paths  zkpath.Group
	churn  *atomic.Bool
	n      *atomic.Int32 // writes made
}

func (c churningConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if c.churn.Load() {
		other := map[string]string{c.paths.Topic("a"): c.paths.Topic("b"), c.paths.Topic("b"): c.paths.Topic("a")}[path]
		if other != "" {
			if _, err := c.writer.Set(other, []byte("0"), -1); err != nil {
				return nil, nil, nil, err
			}
			c.n.Add(1)
		}
	}
	return c.Conn.GetW(path)
}

// TestSetUnsettledRetries: a set that changes in every reading is not
// published half-read; after a bounded number of readings the attempt
// fails, is logged and retried, and once the changes stop the set is
// published whole.
func TestSetUnsettledRetries(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second)
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	churn, writes := new(atomic.Bool), new(atomic.Int32)
	logs := actortest.NewLogs()
	m := startSetWith(t, []string{srv.Addr()}, paths, map[string][]int32{"a": {0}, "b": {0}}, func(c zksession.Conn) zksession.Conn {
		return churningConn{Conn: c, writer: obs.Conn, paths: paths, churn: churn, n: writes}
	}, func(cfg *partset.Config) { cfg.Logger = slog.New(logs) })
	m.waitParts(append(actortest.Parts("a", 0), actortest.Parts("b", 0)...))

	churn.Store(true)
	if _, err := obs.Conn.Set(paths.Topic("a"), []byte("0-1"), -1); err != nil {
		t.Fatal(err)
	}
	rec := logs.Next(t, 10*time.Second)
	if !strings.Contains(rec.Attrs["err"], "kept changing") {
		t.Fatalf("logged %q %v, want the set's failure to settle", rec.Msg, rec.Attrs)
	}
	churn.Store(false)
	if n := writes.Load(); n < 8 {
		t.Errorf("%d writes before the attempt gave up, want at least 8 (one per reading)", n)
	}
	select {
	case v := <-m.set.Views():
		t.Fatalf("published %v while the set kept changing", v.Partitions)
	default:
	}
	// The view the changes end with (a read that saw churn set may write
	// once more after the store).
	actortest.AwaitChan(t, m.set.Views(), &m.last, 10*time.Second, "view of the last change", func(v partitions.View) bool {
		return v.Zxid == newest(t, obs.Conn, paths)
	})
}

// TestSetViewOutdated: a view is outdated as soon as a change to the set
// made on its own connection has returned (the watch's event comes
// before the reply), and the set still publishes the change when the
// check has taken the watch's event.
func TestSetViewOutdated(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	m := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"a": {0}})
	v := m.waitParts(actortest.Parts("a", 0))
	if v.Outdated() {
		t.Fatal("the first view is outdated with nothing changed")
	}
	if _, err := m.conn.Set(paths.Topic("a"), []byte("0-1"), -1); err != nil {
		t.Fatal(err)
	}
	if !v.Outdated() {
		t.Fatal("the view is not outdated after a change made on its connection")
	}
	w := m.waitParts(actortest.Parts("a", 0, 1))
	if w.Outdated() {
		t.Error("the view of the change is outdated")
	}
}
