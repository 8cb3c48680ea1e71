package partset_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	"github.com/zkalloc/zkalloc/rebalance"
)

// member runs a session and a partition set, and follows the views.
type member struct {
	t     *testing.T
	set   *partset.Set
	last  partitions.View
	conn  zksession.Conn
	probe *actor.Latest[zksession.State]
	st    zksession.State // the latest state taken from probe
}

func startSet(t *testing.T, servers []string, paths zkpath.Group, seed map[string][]int32) *member {
	t.Helper()
	return startSetWith(t, servers, paths, seed, nil, nil)
}

// startSetWith is startSet with the session's connection wrapped by wrap,
// and the set's Config changed by configure, each if it is not nil.
func startSetWith(t *testing.T, servers []string, paths zkpath.Group, seed map[string][]int32, wrap func(zksession.Conn) zksession.Conn, configure func(*partset.Config)) *member {
	t.Helper()
	m := &member{t: t}
	_, m.probe = actortest.StartWithSession(t, zksession.Config{Servers: servers, Timeout: 4 * time.Second, WrapConn: wrap}, "partitions",
		func(sub *actor.Latest[zksession.State]) actor.Actor {
			cfg := partset.Config{Paths: paths, Seed: seed, Session: sub}
			if configure != nil {
				configure(&cfg)
			}
			m.set = partset.New(testConfig(cfg))
			return m.set
		})
	m.conn = m.waitSession("up", actortest.IsUp).Conn
	return m
}

// testConfig returns cfg with the fields a test leaves out filled in, as
// the allocator would fill them: world-all ACL, a 5 minute Resync, a
// Logger that discards, the real clock. The actor has no defaults of its
// own.
func testConfig(cfg partset.Config) partset.Config {
	if len(cfg.ACL) == 0 {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	if cfg.Resync == 0 {
		cfg.Resync = 5 * time.Minute
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
	return actortest.Await(m.t, m.probe, &m.st, 10*time.Second, what+" session", ok)
}

// waitParts waits for a view with exactly want.
func (m *member) waitParts(want []rebalance.Partition) partitions.View {
	m.t.Helper()
	return actortest.AwaitChan(m.t, m.set.Views(), &m.last, 10*time.Second, fmt.Sprintf("view of %v", want),
		func(v partitions.View) bool { return slices.Equal(v.Partitions, want) })
}

func TestSetSeedAddRemove(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {0, 1, 2}})
	b := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {2, 3}, "u": {9}})
	want := append(actortest.Parts("t", 0, 1, 2, 3), actortest.Parts("u", 9)...)
	va, vb := a.waitParts(want), b.waitParts(want)
	if va.Zxid != vb.Zxid || va.Zxid == 0 {
		t.Errorf("zxids %d and %d, want equal views to carry one zxid", va.Zxid, vb.Zxid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.set.Add(ctx, map[string][]int32{"v": {1, 2}, "t": {10}}); err != nil {
		t.Fatal(err)
	}
	want = append(actortest.Parts("t", 0, 1, 2, 3, 10), actortest.Parts("u", 9)...)
	want = append(want, actortest.Parts("v", 1, 2)...)
	a.waitParts(want)
	b.waitParts(want)

	// Removing the last IDs of a topic empties its node and keeps it (see
	// TestNoLostSetWrite); an emptied topic has no partitions, and is not
	// corrupt.
	if err := b.set.Remove(ctx, map[string][]int32{"u": {9}, "v": {1, 2}, "t": {0, 77}}); err != nil {
		t.Fatal(err)
	}
	want = actortest.Parts("t", 1, 2, 3, 10)
	for _, v := range []partitions.View{a.waitParts(want), b.waitParts(want)} {
		if len(v.Corrupt) > 0 {
			t.Errorf("view with emptied topics: corrupt %v, want none", v.Corrupt)
		}
	}
	for _, topic := range []string{"u", "v"} {
		if data, _, err := a.conn.Get(paths.Topic(topic)); err != nil || len(data) != 0 {
			t.Errorf("topic node %s: data %q, err %v; want it kept, empty", topic, data, err)
		}
	}
	data, _, err := a.conn.Get(paths.Topic("t"))
	if err != nil || string(data) != "1-3,10" {
		t.Errorf("topic t holds %q (%v), want %q", data, err, "1-3,10")
	}

	if err := a.set.Add(ctx, map[string][]int32{"bad/topic": {1}}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Add with a bad topic = %v, want ErrInvalid", err)
	}
}

func TestSetConcurrentAddsAllLand(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	members := []*member{
		startSet(t, []string{srv.Addr()}, paths, nil),
		startSet(t, []string{srv.Addr()}, paths, nil),
		startSet(t, []string{srv.Addr()}, paths, nil),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const perMember = 20
	errs := make(chan error, len(members)*perMember)
	for i, m := range members {
		go func() {
			for j := range perMember {
				errs <- m.set.Add(ctx, map[string][]int32{"t": {int32(i*perMember + j)}})
			}
		}()
	}
	for range len(members) * perMember {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var want []rebalance.Partition
	for id := range int32(len(members) * perMember) {
		want = append(want, rebalance.Partition{Topic: "t", ID: id})
	}
	for _, m := range members {
		m.waitParts(want)
	}
}

func TestSetReportsCorruptTopic(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"good": {1}})
	a.waitParts(actortest.Parts("good", 1))
	if _, err := a.conn.Create(paths.Topic("bad"), []byte("{not ranges}"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.conn.Create(paths.Topic("huge"), []byte("0-2000000000"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for len(a.last.Corrupt) < 2 {
		select {
		case a.last = <-a.set.Views():
		case <-deadline:
			t.Fatalf("corrupt topics not reported: %+v", a.last)
		}
	}
	if !slices.Equal(a.last.Partitions, actortest.Parts("good", 1)) {
		t.Errorf("parts %v, want the good topic only", a.last.Partitions)
	}
	got := fmt.Sprint(a.last.Corrupt)
	if a.last.Corrupt[0].Topic != "bad" || a.last.Corrupt[1].Topic != "huge" {
		t.Errorf("corrupt = %s", got)
	}
	// Writes to a corrupt topic are refused, not papered over.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.set.Add(ctx, map[string][]int32{"bad": {1}}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Add to a corrupt topic = %v, want ErrInvalid", err)
	}
	// The other topics still work.
	if err := a.set.Add(ctx, map[string][]int32{"good": {2}}); err != nil {
		t.Fatal(err)
	}
	a.waitParts(actortest.Parts("good", 1, 2))
}

// every returns the IDs from 0 below n in steps of step.
func every(step, n int32) []int32 {
	var out []int32
	for id := int32(0); id < n; id += step {
		out = append(out, id)
	}
	return out
}

func TestSetBigTopics(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A topic whose data ZooKeeper would refuse is an error at once, not a
	// write retried (and a connection dropped) until the caller gives up.
	huge := every(2, 400_000)
	if n := len(partitions.EncodeIDs(huge)); n <= partitions.MaxTopicBytes {
		t.Fatalf("test data encodes to %d bytes, want more than %d", n, partitions.MaxTopicBytes)
	}
	if err := a.set.Add(ctx, map[string][]int32{"huge": huge}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Add of a topic too big for a znode = %v, want ErrInvalid", err)
	}

	// Two big topics that fit one znode each but not one request together
	// are written in two steps.
	big, bigger := every(2, 150_000), every(2, 260_000)
	if n, m := len(partitions.EncodeIDs(big)), len(partitions.EncodeIDs(bigger)); n+m < 1<<20 || m > partitions.MaxTopicBytes {
		t.Fatalf("test data encodes to %d and %d bytes, want each to fit and both not", n, m)
	}
	if err := a.set.Add(ctx, map[string][]int32{"a": big, "b": bigger}); err != nil {
		t.Fatal(err)
	}
	want := make([]rebalance.Partition, 0, len(big)+len(bigger))
	want = append(want, actortest.Parts("a", big...)...)
	want = append(want, actortest.Parts("b", bigger...)...)
	a.waitParts(want)
}

// The set's topic names are bounded so that every member can read their
// list in one reply: an Add (or a Change) past the bound is refused and
// writes nothing, counting the topics already there, and a set at the
// bound is read.
func TestSetManyTopics(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	most := partitions.MaxTopicsBytes / (rebalance.MaxNameLen + 4)
	var want []rebalance.Partition
	for _, r := range [][2]int{{0, most - 500}, {most - 500, most}} {
		add := make(map[string][]int32)
		for i := r[0]; i < r[1]; i++ {
			add[longTopic(i)] = []int32{0}
			want = append(want, rebalance.Partition{Topic: longTopic(i)})
		}
		if err := a.set.Add(ctx, add); err != nil {
			t.Fatalf("Add of topics %d to %d: %v", r[0], r[1]-1, err)
		}
	}
	a.waitParts(want)
	more := longTopic(most)
	if err := a.set.Add(ctx, map[string][]int32{more: {0}, longTopic(0): {1}}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Add of topic %d with %d there = %v, want ErrInvalid", most+1, most, err)
	}
	if err := partset.Change(a.conn, paths, false, map[string][]int32{more: {0}}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Change adding topic %d with %d there = %v, want ErrInvalid", most+1, most, err)
	}
	if exists, _, err := a.conn.Exists(paths.Topic(more)); err != nil || exists {
		t.Errorf("refused topic: exists %v, %v", exists, err)
	}
	if err := a.set.Add(ctx, map[string][]int32{longTopic(0): {1}}); err != nil {
		t.Errorf("Add of an ID to a topic there: %v", err)
	}
	want = slices.Insert(want, 1, rebalance.Partition{Topic: longTopic(0), ID: 1})
	a.waitParts(want)
	startSet(t, []string{srv.Addr()}, paths, nil).waitParts(want)
}

// firstView returns the first view m's set publishes.
func (m *member) firstView() partitions.View {
	m.t.Helper()
	select {
	case v := <-m.set.Views():
		return v
	case <-time.After(10 * time.Second):
		m.t.Fatal("no view")
	}
	return partitions.View{}
}

// A member reads the set before merging its seed, and writes only if
// something is missing; either way its first view already holds the seed.
func TestSetFirstViewHoldsSeed(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {0, 1, 2}})
	if v := a.firstView(); !slices.Equal(v.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Fatalf("first member's first view %v, want its seed", v.Partitions)
	}
	_, before, err := a.conn.Get(paths.Topic("t"))
	if err != nil {
		t.Fatal(err)
	}

	b := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {1, 2}})
	if v := b.firstView(); !slices.Equal(v.Partitions, actortest.Parts("t", 0, 1, 2)) {
		t.Errorf("stored seed: first view %v, want %v", v.Partitions, actortest.Parts("t", 0, 1, 2))
	}
	_, after, err := a.conn.Get(paths.Topic("t"))
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version {
		t.Errorf("topic t: version %d after a seed that was stored already, want %d (not written)", after.Version, before.Version)
	}

	c := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {2, 3}, "u": {0}})
	want := append(actortest.Parts("t", 0, 1, 2, 3), actortest.Parts("u", 0)...)
	if v := c.firstView(); !slices.Equal(v.Partitions, want) {
		t.Errorf("partly stored seed: first view %v, want %v", v.Partitions, want)
	}
}

// snapshot returns the partitions node's stat and each topic node's
// version, so that a test can tell whether anything was written.
func snapshot(t *testing.T, conn zksession.Conn, paths zkpath.Group) string {
	t.Helper()
	names, dir, err := conn.Children(paths.Partitions())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	out := fmt.Sprintf("cversion %d pzxid %d;", dir.Cversion, dir.Pzxid)
	for _, name := range names {
		_, stat, err := conn.Get(paths.Topic(name))
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf(" %s version %d mzxid %d;", name, stat.Version, stat.Mzxid)
	}
	return out
}

// A change too big for one multi is written in several; one whose last
// topic is refused for good is refused before the first of them, not
// after the others have been applied.
func TestSetRefusedChangeIsNotPartlyApplied(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	// Two topics that fit one multi each but not one together, so that
	// the change takes at least two multis.
	big := every(2, 150_000)
	if n := len(partitions.EncodeIDs(big)); 2*n < 512<<10 || n > 512<<10 {
		t.Fatalf("test data encodes to %d bytes, want it to fit one multi and two not", n)
	}
	tests := []struct {
		name    string
		present map[string]string // topic nodes created beforehand, with their data
		last    []int32           // the change to topic "c"
	}{
		{name: "corrupt data", present: map[string]string{"c": "{not ranges}"}, last: []int32{1}},
		{name: "too big for a znode", last: every(2, 400_000)},
		{name: "too many IDs", present: map[string]string{"c": fmt.Sprintf("0-%d", partitions.MaxTopicIDs-1)}, last: []int32{partitions.MaxTopicIDs + 1}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := zkpath.Group{Root: "/zkalloc", Group: fmt.Sprintf("refused%d", i)}
			m := startSet(t, []string{srv.Addr()}, paths, nil)
			m.firstView() // the partitions node exists
			for topic, data := range tt.present {
				if _, err := m.conn.Create(paths.Topic(topic), []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, m.conn, paths)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := m.set.Add(ctx, map[string][]int32{"a": big, "b": big, "c": tt.last})
			if !errors.Is(err, rebalance.ErrInvalid) {
				t.Errorf("Add = %v, want ErrInvalid", err)
			}
			if after := snapshot(t, m.conn, paths); after != before {
				t.Errorf("the refused change was partly applied:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// An emptied topic (a node with no data) is a topic with no partitions
// for every reader: a member that starts with it there, one that sees it
// emptied and filled again, and Read. None of them calls it corrupt.
func TestSetReadsEmptiedTopic(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	a := startSet(t, []string{srv.Addr()}, paths, map[string][]int32{"t": {0}, "u": {1, 2}})
	a.waitParts(append(actortest.Parts("t", 0), actortest.Parts("u", 1, 2)...))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.set.Remove(ctx, map[string][]int32{"u": {1, 2}}); err != nil {
		t.Fatal(err)
	}
	noCorrupt := func(who string, v partitions.View) {
		t.Helper()
		if len(v.Corrupt) > 0 {
			t.Errorf("%s: corrupt %v, want none", who, v.Corrupt)
		}
	}
	noCorrupt("after emptying u", a.waitParts(actortest.Parts("t", 0)))
	b := startSet(t, []string{srv.Addr()}, paths, nil)
	noCorrupt("member started with u empty", b.waitParts(actortest.Parts("t", 0)))
	set, corrupt, err := partset.Read(a.conn, paths)
	if err != nil || len(corrupt) > 0 || fmt.Sprint(set) != "map[t:[0]]" {
		t.Errorf("Read = %v, corrupt %v, %v; want t:0 alone", set, corrupt, err)
	}

	if err := partset.Change(a.conn, paths, false, map[string][]int32{"u": {3}}); err != nil {
		t.Fatal(err)
	}
	want := append(actortest.Parts("t", 0), actortest.Parts("u", 3)...)
	a.waitParts(want)
	b.waitParts(want)
	if _, stat, err := a.conn.Get(paths.Topic("u")); err != nil || stat.Version != 2 {
		t.Errorf("topic u: %+v, %v; want its first node at version 2 (created, emptied, filled)", stat, err)
	}
}

// longTopic is the i-th topic name of [rebalance.MaxNameLen] bytes (as in
// package partitions' tests).
func longTopic(i int) string {
	name := fmt.Sprintf("%05d-", i)
	return name + strings.Repeat("t", rebalance.MaxNameLen-len(name))
}
