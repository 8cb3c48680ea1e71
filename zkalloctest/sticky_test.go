package zkalloctest_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/zkalloctest"
)

// owned returns every running member's assigned partitions by name.
func owned(ms ...*zkalloctest.Member) map[string][]zkalloc.Partition {
	out := make(map[string][]zkalloc.Partition, len(ms))
	for _, m := range ms {
		out[m.Name()] = m.Current().Assigned
	}
	return out
}

// moved counts the partitions whose owner differs between before and
// after, including those with an owner in only one of them.
func moved(before, after map[string][]zkalloc.Partition) int {
	owner := make(map[zkalloc.Partition]string)
	for name, ps := range before {
		for _, p := range ps {
			owner[p] = name
		}
	}
	n := 0
	for name, ps := range after {
		for _, p := range ps {
			if owner[p] != name {
				n++
			}
		}
	}
	return n
}

// With the default strategy, the sticky one, a leave moves exactly the
// leaver's partitions, a join the minimum, and a drain and undrain only
// the drained member's share; the group's record agrees with what the
// members own.
func TestStickyDefaultMovesTheMinimum(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 30)})
	shared := newRunningOn(t, true)
	a, _ := joinConsume(t, g, "a", shared)
	b, _ := joinConsume(t, g, "b", shared)
	c, _ := joinConsume(t, g, "c", shared)
	converge(t, ctx, g)
	if _, ok := g.Record(); !ok {
		t.Fatal("no record: the default strategy is not the sticky one")
	}
	three := owned(a, b, c)
	for name, ps := range three {
		if len(ps) != 10 {
			t.Fatalf("%s has %d partitions, want 10 of 30", name, len(ps))
		}
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, g)
	two := owned(a, b)
	if n := moved(map[string][]zkalloc.Partition{"a": three["a"], "b": three["b"]}, two); n != 10 {
		t.Errorf("c's leave moved %d partitions, want its 10 (a and b keep theirs)", n)
	}
	for _, name := range []string{"a", "b"} {
		if kept := len(intersect(three[name], two[name])); kept != 10 || len(two[name]) != 15 {
			t.Errorf("%s kept %d of its 10 and has %d, want 10 and 15", name, kept, len(two[name]))
		}
	}

	c, _ = joinConsume(t, g, "c", shared)
	converge(t, ctx, g)
	back := owned(a, b, c)
	if n := moved(two, back); n != 10 {
		t.Errorf("c's return moved %d, want 10", n)
	}
	if got := len(intersect(back["c"], three["c"])); got != 10 {
		t.Errorf("c got back %d of its own 10 partitions, want all", got)
	}

	if err := g.Drain("b"); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, g)
	drained := owned(a, b, c)
	if len(drained["b"]) != 0 || moved(back, drained) != 10 {
		t.Errorf("after draining b: b has %v, %d moved; want none and 10", drained["b"], moved(back, drained))
	}
	g.Undrain("b")
	converge(t, ctx, g)
	undrained := owned(a, b, c)
	if n := moved(drained, undrained); n != 10 || len(intersect(undrained["b"], back["b"])) != 10 {
		t.Errorf("undraining b moved %d, gave it back %d of its own; want 10 and 10", n, len(intersect(undrained["b"], back["b"])))
	}
	if rec, ok := g.Record(); !ok || !maps.EqualFunc(rec, undrained, slices.Equal) {
		t.Errorf("record %v, want what the members own, %v", rec, undrained)
	}
	if err := g.Drain("nobody"); err == nil {
		t.Error("Drain of an unknown member succeeded")
	}
}

// A member's weight sets its share.
func TestStickyWeights(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 40), Weights: map[string]int{"big": 3}})
	shared := newRunningOn(t, true)
	big, _ := joinConsume(t, g, "big", shared)
	small, _ := joinConsume(t, g, "small", shared)
	converge(t, ctx, g)
	if nb, ns := len(big.Current().Assigned), len(small.Current().Assigned); nb != 30 || ns != 10 {
		t.Errorf("big has %d and small %d, want 30 and 10 (weights 3:1)", nb, ns)
	}
}

// A stateless strategy keeps no record and takes no weight.
func TestStatelessStrategyKeepsNoRecord(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 8), Strategy: rebalance.Balanced})
	joinConsume(t, g, "a", newRunningOn(t, true))
	converge(t, ctx, g)
	if _, ok := g.Record(); ok {
		t.Error("a Balanced group has a record")
	}
	g2, err := zkalloctest.NewGroup(zkalloctest.Config{Partitions: ids("t", 8), Strategy: rebalance.Balanced, Weights: map[string]int{"w": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.Join("w"); err == nil {
		t.Error("a weight with Balanced was accepted")
	}
}

func intersect(a, b []zkalloc.Partition) []zkalloc.Partition {
	var out []zkalloc.Partition
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}
