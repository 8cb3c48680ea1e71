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

// full is the data of a topic with every ID it may hold.
var full = []byte(fmt.Sprintf("0-%d", partitions.MaxTopicIDs-1))

// waitView waits for a view that satisfies ok.
func (m *member) waitView(what string, ok func(partitions.View) bool) partitions.View {
	m.t.Helper()
	return actortest.AwaitChan(m.t, m.set.Views(), &m.last, 30*time.Second, what, ok)
}

// corruptTopics lists the names of v's corrupt topics.
func corruptTopics(v partitions.View) []string {
	var out []string
	for _, c := range v.Corrupt {
		out = append(out, c.Topic)
	}
	return out
}

// TestSetReadsWithinMaxPartitions writes, from outside, more partitions
// than a set may hold: a topic of MaxTopicIDs (as many as MaxPartitions),
// a small one after it, and twenty more full ones, 22 million partitions
// in a few bytes each. The view takes topics in name order while they fit
// and reports the others as corrupt, naming the limit, without decoding
// them; one error is logged for them. When the first topic shrinks, the
// small one fits and is read again.
func TestSetReadsWithinMaxPartitions(t *testing.T) {
	t.Parallel()
	if partitions.MaxPartitions != partitions.MaxTopicIDs {
		t.Fatalf("the test assumes MaxPartitions = MaxTopicIDs")
	}
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	if err := zkpath.Ensure(obs, paths.Partitions()); err != nil {
		t.Fatal(err)
	}
	ops := []any{
		&zk.CreateRequest{Path: paths.Topic("a"), Data: full, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: paths.Topic("b"), Data: []byte("0-9"), Acl: zk.WorldACL(zk.PermAll)},
	}
	over := []string{"b"}
	for i := range 20 {
		name := fmt.Sprintf("x%02d", i)
		ops = append(ops, &zk.CreateRequest{Path: paths.Topic(name), Data: full, Acl: zk.WorldACL(zk.PermAll)})
		over = append(over, name)
	}
	if _, err := obs.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	logs := actortest.NewLogs()
	m := startSetWith(t, []string{srv.Addr()}, paths, nil, nil, func(c *partset.Config) { c.Logger = slog.New(logs) })
	v := m.waitView("a view", func(v partitions.View) bool { return len(v.Partitions) > 0 })
	if len(v.Partitions) != partitions.MaxPartitions || v.Partitions[0].Topic != "a" || v.Partitions[len(v.Partitions)-1].Topic != "a" {
		t.Errorf("view of %d partitions; want the %d of topic a", len(v.Partitions), partitions.MaxPartitions)
	}
	if got := corruptTopics(v); !slices.Equal(got, over) {
		t.Errorf("corrupt topics %v; want %v", got, over)
	}
	for _, c := range v.Corrupt {
		if !errors.Is(c.Err, rebalance.ErrInvalid) || !strings.Contains(c.Err.Error(), "MaxPartitions") || !strings.Contains(c.Err.Error(), fmt.Sprint(partitions.MaxPartitions)) {
			t.Errorf("topic %s: %v; want an error naming MaxPartitions and its value", c.Topic, c.Err)
			break
		}
	}
	r := logs.Next(t, 10*time.Second)
	if !strings.Contains(r.Msg, "MaxPartitions") || r.Attrs["topics"] != "21" {
		t.Errorf("log %q %v; want one error naming MaxPartitions for the 21 topics", r.Msg, r.Attrs)
	}

	// Adding past the limit is refused, naming it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.set.Add(ctx, map[string][]int32{"c": {1}}); !errors.Is(err, rebalance.ErrInvalid) || !strings.Contains(err.Error(), "MaxPartitions") {
		t.Errorf("Add past the limit = %v; want ErrInvalid naming MaxPartitions", err)
	}
	if err := partset.Change(obs, paths, false, map[string][]int32{"c": {1}}); !errors.Is(err, rebalance.ErrInvalid) || !strings.Contains(err.Error(), "MaxPartitions") {
		t.Errorf("Change past the limit = %v; want ErrInvalid naming MaxPartitions", err)
	}

	// Ten fewer in a: b fits, and is read again.
	if _, err := obs.Set(paths.Topic("a"), []byte(fmt.Sprintf("0-%d", partitions.MaxTopicIDs-11)), -1); err != nil {
		t.Fatal(err)
	}
	v = m.waitView("b taken", func(v partitions.View) bool {
		return slices.Contains(v.Partitions, rebalance.Partition{Topic: "b", ID: 9})
	})
	if len(v.Partitions) != partitions.MaxPartitions {
		t.Errorf("view of %d partitions; want %d", len(v.Partitions), partitions.MaxPartitions)
	}
	if got := corruptTopics(v); !slices.Equal(got, over[1:]) {
		t.Errorf("corrupt topics %v; want %v", got, over[1:])
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d logs; want the one", n)
	}
}

// TestSetReadsWithinMaxTopicsBytes writes, from outside, more topics than
// the bound on their names allows (names of 249 bytes, 2,000 of them):
// the view takes those within it in name order and reports the others as
// corrupt, naming the limit, without reading them.
func TestSetReadsWithinMaxTopicsBytes(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	if err := zkpath.Ensure(obs, paths.Partitions()); err != nil {
		t.Fatal(err)
	}
	const n, nameLen = 2000, rebalance.MaxNameLen
	fit := partitions.MaxTopicsBytes / (nameLen + 4)
	var ops []any
	for i := range n {
		name := fmt.Sprintf("%04d", i) + strings.Repeat("t", nameLen-4)
		ops = append(ops, &zk.CreateRequest{Path: paths.Topic(name), Data: []byte("0"), Acl: zk.WorldACL(zk.PermAll)})
	}
	for len(ops) > 0 { // multis under the server's request limit
		k := min(len(ops), 1000)
		if _, err := obs.Multi(ops[:k]...); err != nil {
			t.Fatal(err)
		}
		ops = ops[k:]
	}
	m := startSet(t, []string{srv.Addr()}, paths, nil)
	v := m.waitView("a view", func(v partitions.View) bool { return len(v.Partitions) > 0 })
	if len(v.Partitions) != fit || len(v.Corrupt) != n-fit {
		t.Fatalf("view of %d partitions, %d corrupt topics; want %d and %d", len(v.Partitions), len(v.Corrupt), fit, n-fit)
	}
	if first := v.Corrupt[0]; !strings.HasPrefix(first.Topic, fmt.Sprintf("%04d", fit)) || !strings.Contains(first.Err.Error(), "MaxTopicsBytes") {
		t.Errorf("first corrupt topic %.8s...: %v; want topic %d, an error naming MaxTopicsBytes", first.Topic, first.Err, fit)
	}
}

// TestSetSeedPastMaxPartitions: a seed that would take the set past
// MaxPartitions stops the set with an error naming the limit.
func TestSetSeedPastMaxPartitions(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	if err := zkpath.Ensure(obs, paths.Partitions()); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Topic("a"), full, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	run, _ := actortest.StartWithSession(t, zksession.Config{Servers: []string{srv.Addr()}, Timeout: 4 * time.Second}, "partitions",
		func(sub *actor.Latest[zksession.State]) actor.Actor {
			return partset.New(testConfig(partset.Config{Paths: paths, Seed: map[string][]int32{"b": {0}}, Session: sub}))
		})
	run.MayFail()
	select {
	case <-run.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the set runs with a seed past the limit")
	}
	if err := run.Err(); err == nil || !strings.Contains(err.Error(), "MaxPartitions") {
		t.Errorf("Run = %v; want an error naming MaxPartitions", err)
	}
}
