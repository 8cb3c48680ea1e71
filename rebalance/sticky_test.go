package rebalance_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// topic returns partitions 0 to n-1 of topic t.
func topic(t string, n int) []rebalance.Partition {
	ps := make([]rebalance.Partition, n)
	for i := range ps {
		ps[i] = rebalance.Partition{Topic: t, ID: int32(i)}
	}
	return ps
}

// weight1 returns members of weight 1.
func weight1(names ...string) []rebalance.Member {
	ms := make([]rebalance.Member, len(names))
	for i, n := range names {
		ms[i] = rebalance.Member{Name: n, Weight: 1}
	}
	return ms
}

func mustSticky(t *testing.T, prev rebalance.Placement, ms []rebalance.Member, parts []rebalance.Partition) rebalance.Result {
	t.Helper()
	r, err := rebalance.Sticky(prev, ms, parts)
	if err != nil {
		t.Fatalf("Sticky: %v", err)
	}
	return r
}

func counts(a map[string][]rebalance.Partition) map[string]int {
	out := make(map[string]int, len(a))
	for m, ps := range a {
		out[m] = len(ps)
	}
	return out
}

// contains reports whether every partition of sub is in super; both are
// sorted.
func contains(super, sub []rebalance.Partition) bool {
	for _, p := range sub {
		if _, ok := slices.BinarySearchFunc(super, p, rebalance.Compare); !ok {
			return false
		}
	}
	return true
}

// TestStickyLeaveMovesOnlyTheLeaversPartitions is the issue's example: 3
// members, 30 partitions, c leaves; a and b keep all they had and take
// c's 10, 5 each, trading nothing between themselves.
func TestStickyLeaveMovesOnlyTheLeaversPartitions(t *testing.T) {
	parts := topic("t", 30)
	r0 := mustSticky(t, rebalance.Placement{}, weight1("a", "b", "c"), parts)
	if got, want := counts(r0.Assigned()), map[string]int{"a": 10, "b": 10, "c": 10}; !maps.Equal(got, want) {
		t.Fatalf("fresh: got %v, want %v", got, want)
	}
	r1 := mustSticky(t, r0.Next, weight1("a", "b"), parts)
	if got, want := counts(r1.Assigned()), map[string]int{"a": 15, "b": 15}; !maps.Equal(got, want) {
		t.Fatalf("after c left: got %v, want %v", got, want)
	}
	for _, m := range []string{"a", "b"} {
		if !contains(r1.Assigned()[m], r0.Assigned()[m]) {
			t.Errorf("%s lost some of %v: now %v", m, r0.Assigned()[m], r1.Assigned()[m])
		}
	}
	if r1.Moved != 10 {
		t.Errorf("moved %d, want c's 10", r1.Moved)
	}
	if got := r1.Of("c"); len(got) != 0 || got == nil {
		t.Errorf("Of(c) after c left = %#v, want an empty slice", got)
	}
	for _, p := range r0.Assigned()["c"] {
		if h := r1.Next.Homes()[p]; h != "c" {
			t.Errorf("home of %s = %q, want c", p, h)
		}
	}
}

// TestStickyReturningMemberGetsItsOwnBack: c crashes, a and b take its
// partitions; c returns under its name and takes back exactly the
// partitions it had, which a and b hold above their shares.
func TestStickyReturningMemberGetsItsOwnBack(t *testing.T) {
	parts := topic("t", 30)
	r0 := mustSticky(t, rebalance.Placement{}, weight1("a", "b", "c"), parts)
	r1 := mustSticky(t, r0.Next, weight1("a", "b"), parts)
	r2 := mustSticky(t, r1.Next, weight1("a", "b", "c"), parts)
	if !reflect.DeepEqual(r2.Assigned(), r0.Assigned()) {
		t.Errorf("after c returned: got %v, want the assignment before it left %v", r2.Assigned(), r0.Assigned())
	}
	if r2.Moved != 10 {
		t.Errorf("moved %d, want 10", r2.Moved)
	}
	if h := r2.Next.Homes(); len(h) != 0 {
		t.Errorf("homes left after c came back: %v", h)
	}
}

// TestStickyWeights: weights 2:1:1 over 100 partitions give 50, 25, 25;
// raising c's weight to 2 moves partitions only to c.
func TestStickyWeights(t *testing.T) {
	parts := topic("t", 100)
	ms := []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	r0 := mustSticky(t, rebalance.Placement{}, ms, parts)
	if got, want := counts(r0.Assigned()), map[string]int{"a": 50, "b": 25, "c": 25}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	ms[2].Weight = 2 // 2:1:2 over 100: 40, 20, 40
	r1 := mustSticky(t, r0.Next, ms, parts)
	if got, want := counts(r1.Assigned()), map[string]int{"a": 40, "b": 20, "c": 40}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if r1.Moved != 15 {
		t.Errorf("moved %d, want 10 from a and 5 from b", r1.Moved)
	}
	for _, m := range []string{"a", "b"} {
		if !contains(r0.Assigned()[m], r1.Assigned()[m]) {
			t.Errorf("%s gained partitions: %v", m, r1.Assigned()[m])
		}
	}
	if !contains(r1.Assigned()["c"], r0.Assigned()["c"]) {
		t.Errorf("c lost partitions")
	}
}

// TestStickyDrainAndUndrain: a drained member gives everything and the
// others take exactly its partitions; undrained, it takes only from the
// members above their share, and takes back its own.
func TestStickyDrainAndUndrain(t *testing.T) {
	parts := append(topic("t", 20), topic("u", 10)...)
	ms := weight1("a", "b", "c")
	r0 := mustSticky(t, rebalance.Placement{}, ms, parts)
	ms[1].Drained = true
	r1 := mustSticky(t, r0.Next, ms, parts)
	if got, want := counts(r1.Assigned()), map[string]int{"a": 15, "b": 0, "c": 15}; !maps.Equal(got, want) {
		t.Fatalf("drained: got %v, want %v", got, want)
	}
	if r1.Moved != 10 || !contains(r1.Assigned()["a"], r0.Assigned()["a"]) || !contains(r1.Assigned()["c"], r0.Assigned()["c"]) {
		t.Errorf("drain moved %d, want only b's 10", r1.Moved)
	}
	ms[1].Drained = false
	r2 := mustSticky(t, r1.Next, ms, parts)
	if !reflect.DeepEqual(r2.Assigned(), r0.Assigned()) {
		t.Errorf("undrained: got %v, want %v", r2.Assigned(), r0.Assigned())
	}

	// Undrain into weighted shares: while b (weight 2) is drained, d, e
	// and f (2:1:1) hold 24, 12 and 12 of 48; with b back, 2:2:1:1 gives
	// 16, 16, 8, 8, so b takes 8 from d and 4 each from e and f.
	parts = topic("t", 48)
	ms = []rebalance.Member{{Name: "b", Weight: 2, Drained: true}, {Name: "d", Weight: 2}, {Name: "e", Weight: 1}, {Name: "f", Weight: 1}}
	r3 := mustSticky(t, rebalance.Placement{}, ms, parts) // 24, 12, 12
	ms[0].Drained = false
	r4 := mustSticky(t, r3.Next, ms, parts)
	if got, want := counts(r4.Assigned()), map[string]int{"b": 16, "d": 16, "e": 8, "f": 8}; !maps.Equal(got, want) {
		t.Fatalf("undrain: got %v, want %v", got, want)
	}
	if r4.Moved != 16 {
		t.Errorf("undrain moved %d, want 8 from d and 4 each from e and f", r4.Moved)
	}
}

// TestStickyUndrainTakesOnlyFromMembersAboveShare: x is drained while y
// and z are at their shares and w is above; undraining x takes
// only from w, its last three in Compare order.
func TestStickyUndrainTakesOnlyFromMembersAboveShare(t *testing.T) {
	parts := topic("t", 12)
	owned := map[string][]rebalance.Partition{
		"w": parts[0:6], // 12 over 4 members is 3 each: w is 3 over
		"y": parts[6:9], // at its share
		"z": parts[9:12],
	}
	prev, err := rebalance.PlacementFrom(owned)
	if err != nil {
		t.Fatal(err)
	}
	ms := weight1("w", "x", "y", "z")
	r := mustSticky(t, prev, ms, parts)
	if got, want := counts(r.Assigned()), map[string]int{"w": 3, "x": 3, "y": 3, "z": 3}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !reflect.DeepEqual(r.Assigned()["y"], owned["y"]) || !reflect.DeepEqual(r.Assigned()["z"], owned["z"]) {
		t.Errorf("y or z changed: %v", r.Assigned())
	}
	if want := parts[3:6]; !reflect.DeepEqual(r.Assigned()["x"], want) {
		t.Errorf("x got %v, want %v", r.Assigned()["x"], want)
	}
}

// TestStickyNewAndRemovedPartitions: removed partitions go without
// moving anything; new ones go where shares are short.
func TestStickyNewAndRemovedPartitions(t *testing.T) {
	parts := topic("t", 9)
	r0 := mustSticky(t, rebalance.Placement{}, weight1("a", "b", "c"), parts)
	// Remove a's three: a is short by 2, b and c hold 3 with shares 2 each.
	r1 := mustSticky(t, r0.Next, weight1("a", "b", "c"), slices.DeleteFunc(slices.Clone(parts), func(p rebalance.Partition) bool {
		return slices.Contains(r0.Assigned()["a"], p)
	}))
	if got, want := counts(r1.Assigned()), map[string]int{"a": 2, "b": 2, "c": 2}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if r1.Moved != 2 {
		t.Errorf("moved %d, want 2", r1.Moved)
	}
	// Add 3 new ones to r0's 9: each member takes one new one, nothing else.
	more := topic("t", 12)
	r2 := mustSticky(t, r0.Next, weight1("a", "b", "c"), more)
	if r2.Moved != 3 {
		t.Errorf("moved %d, want the 3 new partitions", r2.Moved)
	}
	for _, m := range []string{"a", "b", "c"} {
		if !contains(r2.Assigned()[m], r0.Assigned()[m]) || len(r2.Assigned()[m]) != 4 {
			t.Errorf("%s: %v, had %v", m, r2.Assigned()[m], r0.Assigned()[m])
		}
	}
}

// TestStickyFillsMostShortFirst: in a first assignment, a is short by 3
// and b by 2, so a takes one, then both take one each in name order,
// twice; the members short by the most take one each in name order.
func TestStickyFillsMostShortFirst(t *testing.T) {
	r := mustSticky(t, rebalance.Placement{}, weight1("b", "a"), topic("t", 5))
	want := map[string][]rebalance.Partition{
		"a": {{Topic: "t", ID: 0}, {Topic: "t", ID: 1}, {Topic: "t", ID: 3}},
		"b": {{Topic: "t", ID: 2}, {Topic: "t", ID: 4}},
	}
	if !reflect.DeepEqual(r.Assigned(), want) {
		t.Errorf("got %v, want %v", r.Assigned(), want)
	}
	// Shares 1, 3, 2: b takes one; then b and c; then a, b and c.
	ms := []rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}, {Name: "c", Weight: 2}}
	r = mustSticky(t, rebalance.Placement{}, ms, topic("t", 6))
	want = map[string][]rebalance.Partition{
		"a": {{Topic: "t", ID: 3}},
		"b": {{Topic: "t", ID: 0}, {Topic: "t", ID: 1}, {Topic: "t", ID: 4}},
		"c": {{Topic: "t", ID: 2}, {Topic: "t", ID: 5}},
	}
	if !reflect.DeepEqual(r.Assigned(), want) {
		t.Errorf("weighted: got %v, want %v", r.Assigned(), want)
	}
}

func TestShares(t *testing.T) {
	tests := []struct {
		name    string
		members []rebalance.Member
		n       int
		held    map[string]int
		want    map[string]int
	}{
		{"equal, ties by name", weight1("c", "a", "b"), 10, nil, map[string]int{"a": 4, "b": 3, "c": 3}},
		{"equal, ties to who holds more", weight1("a", "b", "c"), 10, map[string]int{"c": 4, "a": 3, "b": 3}, map[string]int{"a": 3, "b": 3, "c": 4}},
		{"largest remainder first", []rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}}, 10, map[string]int{"a": 10}, map[string]int{"a": 3, "b": 7}},
		{"2:1:1 over 100", []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}, 100, nil, map[string]int{"a": 50, "b": 25, "c": 25}},
		{"drained and weight 0 get nothing", []rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 3, Drained: true}, {Name: "c"}}, 7, nil, map[string]int{"a": 7, "b": 0, "c": 0}},
		{"no partitions, no weight", []rebalance.Member{{Name: "a"}}, 0, nil, map[string]int{"a": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rebalance.Shares(tt.members, tt.n, tt.held)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStickyErrors(t *testing.T) {
	parts := topic("t", 3)
	bad := rebalance.Placement{Names: []string{"a"}, Parts: topic("t", 2), Owner: []int32{0, 1}}
	tests := []struct {
		name    string
		prev    rebalance.Placement
		members []rebalance.Member
		parts   []rebalance.Partition
		want    error
	}{
		{"duplicate member", rebalance.Placement{}, weight1("a", "b", "a"), parts, rebalance.ErrInvalid},
		{"negative weight", rebalance.Placement{}, []rebalance.Member{{Name: "a", Weight: -1}}, parts, rebalance.ErrInvalid},
		{"weight too large", rebalance.Placement{}, []rebalance.Member{{Name: "a", Weight: rebalance.MaxWeight + 1}}, parts, rebalance.ErrInvalid},
		{"empty name", rebalance.Placement{}, weight1(""), parts, rebalance.ErrInvalid},
		{"slash in name", rebalance.Placement{}, weight1("a/b"), parts, rebalance.ErrInvalid},
		{"all weights zero", rebalance.Placement{}, []rebalance.Member{{Name: "a"}, {Name: "b", Weight: 1, Drained: true}}, parts, rebalance.ErrNoMembers},
		{"no members", rebalance.Placement{}, nil, parts, rebalance.ErrNoMembers},
		{"duplicate partition", rebalance.Placement{}, weight1("a"), append(topic("t", 3), rebalance.Partition{Topic: "t", ID: 1}), rebalance.ErrInvalid},
		{"owner out of range", bad, weight1("a"), parts, rebalance.ErrInvalid},
		{"placement unsorted", rebalance.Placement{Names: []string{"a"}, Parts: []rebalance.Partition{{Topic: "t", ID: 1}, {Topic: "t", ID: 0}}, Owner: []int32{0, 0}}, weight1("a"), parts, rebalance.ErrInvalid},
		{"placement short homes", rebalance.Placement{Names: []string{"a"}, Parts: topic("t", 2), Owner: []int32{0, 0}, Home: []int32{-1}}, weight1("a"), parts, rebalance.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rebalance.Sticky(tt.prev, tt.members, tt.parts)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	// No partitions and nobody to take them is fine: nothing to assign.
	r, err := rebalance.Sticky(rebalance.Placement{}, []rebalance.Member{{Name: "a"}}, nil)
	if err != nil || len(r.Assigned()["a"]) != 0 {
		t.Errorf("got %v, %v; want a with nothing", r.Assigned(), err)
	}
}

func ExampleSticky() {
	parts := topic("t", 6)
	members := []rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	first, _ := rebalance.Sticky(rebalance.Placement{}, members, parts)
	fmt.Println("first:", first.Assigned())
	// c leaves: only its partitions move.
	second, _ := rebalance.Sticky(first.Next, members[:2], parts)
	fmt.Println("c left:", second.Assigned(), "moved", second.Moved)
	// c returns: it takes back its own.
	third, _ := rebalance.Sticky(second.Next, members, parts)
	fmt.Println("c back:", third.Assigned(), "moved", third.Moved)
	// Output:
	// first: map[a:[t:0 t:3] b:[t:1 t:4] c:[t:2 t:5]]
	// c left: map[a:[t:0 t:2 t:3] b:[t:1 t:4 t:5]] moved 2
	// c back: map[a:[t:0 t:3] b:[t:1 t:4] c:[t:2 t:5]] moved 2
}
