package decision_test

import (
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A job's sticky members: live ones weighed by the view, seats by the
// previous record (else 1), drained ones marked; while members run
// balanced, every weight 1 and nobody drained.
func TestJobStickyMembers(t *testing.T) {
	t.Parallel()
	job := decision.Job{
		Members: []string{"a", "b", "s", "t"},
		Live:    []string{"a", "b"},
		Weights: []int{2, 3},
		Drained: []string{"b", "t"},
	}
	prev := func(name string) (int, bool) {
		w, ok := map[string]int{"a": 7, "s": 4}[name]
		return w, ok
	}
	if got, want := job.StickyMembers(prev), []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 3, Drained: true}, {Name: "s", Weight: 4}, {Name: "t", Weight: 1, Drained: true}}; !slices.Equal(got, want) {
		t.Errorf("with a previous record: %+v, want %+v", got, want)
	}
	if got, want := job.StickyMembers(nil), []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 3, Drained: true}, {Name: "s", Weight: 1}, {Name: "t", Weight: 1, Drained: true}}; !slices.Equal(got, want) {
		t.Errorf("without: %+v, want %+v", got, want)
	}
	job.Balanced = []string{"a"}
	for _, m := range job.StickyMembers(prev) {
		if m.Weight != 1 || m.Drained {
			t.Errorf("while a runs balanced: %+v, want weight 1, not drained", m)
		}
	}
}

// StickyNext starts from Balanced's assignment without a previous
// record and while members run balanced, and from prev otherwise.
func TestJobStickyNext(t *testing.T) {
	t.Parallel()
	parts := make([]rebalance.Partition, 12)
	for i := range parts {
		parts[i] = rebalance.Partition{Topic: "t", ID: int32(i)}
	}
	job := decision.Job{Members: []string{"a", "b", "c"}, Live: []string{"a", "b", "c"}, Partitions: parts}
	balanced, err := rebalance.Balanced.Assign(job.Members, parts)
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := job.StickyNext(rebalance.Placement{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range job.Members {
		if !slices.Equal(first.Of(m), balanced[m]) {
			t.Errorf("first record: %s has %v, want Balanced's %v", m, first.Of(m), balanced[m])
		}
	}
	// From a placement that gives a everything: a keeps its share.
	all, err := rebalance.PlacementFrom(map[string][]rebalance.Partition{"a": parts})
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := job.StickyNext(all, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := next.Of("a"); len(got) != 4 || !slices.Equal(got, parts[:4]) {
		t.Errorf("over a previous record: a has %v, want the first 4 it held", got)
	}
	job.Balanced = []string{"b"}
	upgrading, _, err := job.StickyNext(all, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(upgrading.Of("a"), balanced["a"]) {
		t.Errorf("while b runs balanced: a has %v, want Balanced's %v", upgrading.Of("a"), balanced["a"])
	}
}
