package rebalance_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// builtins are the strategies every property below must hold for.
var builtins = []rebalance.Strategy{rebalance.RoundRobin, rebalance.Range, rebalance.Balanced}

// even reports whether s promises a spread of at most one.
func even(s rebalance.Strategy) bool { return s != rebalance.Range }

// spread returns the largest minus the smallest share in got.
func spread(got map[string][]rebalance.Partition) int {
	lo, hi := math.MaxInt, 0
	for _, ps := range got {
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
	}
	if lo == math.MaxInt {
		return 0
	}
	return hi - lo
}

// checkAssign runs s through rebalance.Compute, which fails on a partition
// given to no member or two, an unknown or missing member or an invented
// partition, and checks what Compute does not: that the result is
// the same on a second call and on reshuffled copies of the inputs sorted
// again, that the inputs are left alone, and the spread.
func checkAssign(t testing.TB, r *rand.Rand, s rebalance.Strategy, members []string, parts []rebalance.Partition) map[string][]rebalance.Partition {
	t.Helper()
	keepM, keepP := slices.Clone(members), slices.Clone(parts)
	got, err := rebalance.Compute(s, members, parts)
	if err != nil {
		t.Fatalf("%s on %d members, %d partitions: %v", s.Name(), len(members), len(parts), err)
	}
	if !slices.Equal(members, keepM) || !slices.Equal(parts, keepP) {
		t.Fatalf("%s modified its input", s.Name())
	}
	again, err := rebalance.Compute(s, members, parts)
	if err != nil {
		t.Fatalf("%s second call: %v", s.Name(), err)
	}
	if !equal(got, again) {
		t.Fatalf("%s gave a different assignment on a second call", s.Name())
	}
	// The caller's data may come in any order; the allocator sorts it.
	shuffledM, shuffledP := slices.Clone(members), slices.Clone(parts)
	r.Shuffle(len(shuffledM), func(i, j int) { shuffledM[i], shuffledM[j] = shuffledM[j], shuffledM[i] })
	r.Shuffle(len(shuffledP), func(i, j int) { shuffledP[i], shuffledP[j] = shuffledP[j], shuffledP[i] })
	slices.Sort(shuffledM)
	rebalance.Sort(shuffledP)
	resorted, err := rebalance.Compute(s, shuffledM, shuffledP)
	if err != nil {
		t.Fatalf("%s on resorted input: %v", s.Name(), err)
	}
	if !equal(got, resorted) {
		t.Fatalf("%s gave a different assignment for the same input in another order", s.Name())
	}
	if even(s) && len(members) > 0 {
		if sp := spread(got); sp > 1 {
			t.Fatalf("%s spread %d on %d members, %d partitions", s.Name(), sp, len(members), len(parts))
		}
	}
	return got
}

func equal(a, b map[string][]rebalance.Partition) bool {
	if len(a) != len(b) {
		return false
	}
	for m, ps := range a {
		qs, ok := b[m]
		if !ok || !slices.Equal(ps, qs) {
			return false
		}
	}
	return true
}

// parts returns ids of topic, as partitions.
func parts(topic string, ids ...int32) []rebalance.Partition {
	out := make([]rebalance.Partition, len(ids))
	for i, id := range ids {
		out[i] = rebalance.Partition{Topic: topic, ID: id}
	}
	return out
}

func TestStrategyEdgeCases(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ü", rebalance.MaxNameLen/2) + "x" // 249 bytes
	tests := []struct {
		name    string
		members []string
		parts   []rebalance.Partition
	}{
		{"no members, no partitions", nil, nil},
		{"no partitions", []string{"a", "b", "c"}, nil},
		{"one member", []string{"solo"}, parts("t", 0, 1, 2, 3, 4)},
		{"one partition", []string{"a", "b", "c"}, parts("t", 7)},
		{"more members than partitions", []string{"a", "b", "c", "d", "e", "f", "g"}, parts("t", 0, 1, 2)},
		{"as many members as partitions", []string{"a", "b", "c"}, parts("t", 0, 1, 2)},
		{"sparse large ids", []string{"a", "b"}, parts("t", 0, 1<<20, math.MaxInt32-1, math.MaxInt32)},
		{"colons and dots in topics", []string{"m-1", "m.2", "m:3"},
			append(append(parts("a:b", 0, 1, 2), parts("a.b", 0, 1)...), parts("a-b:c.d", 5, 9)...)},
		{"unicode names", []string{"consumer-ñ", "consumer-日本", "потребитель"},
			append(parts("événements", 0, 1, 2, 3), parts("トピック", 0, 1)...)},
		{"249-byte topic", []string{"a", "b"}, append(parts(long, 0, 1, 2), parts("z", 0)...)},
		{"very long member names", []string{strings.Repeat("m", 300) + "1", strings.Repeat("m", 300) + "2"}, parts("t", 0, 1, 2)},
	}
	for _, tt := range tests {
		rebalance.Sort(tt.parts)
		slices.Sort(tt.members)
		for _, s := range builtins {
			t.Run(tt.name+"/"+s.Name(), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(1, 2))
				if len(tt.members) == 0 {
					got, err := rebalance.Compute(s, tt.members, tt.parts)
					if err != nil || len(got) != 0 {
						t.Fatalf("got %v, %v; want no members and no error", got, err)
					}
					return
				}
				checkAssign(t, r, s, tt.members, tt.parts)
			})
		}
	}
}

func TestStrategyNoMembers(t *testing.T) {
	t.Parallel()
	for _, s := range builtins {
		if _, err := rebalance.Compute(s, nil, parts("t", 0)); err == nil {
			t.Errorf("%s: no error for partitions without members", s.Name())
		}
	}
}

// randomGroup draws members with realistic, sometimes unusual names and
// partitions over several topics with sparse, sometimes huge IDs.
func randomGroup(r *rand.Rand) ([]string, []rebalance.Partition) {
	nm := 1 + r.IntN(40)
	var members []string
	for range nm {
		switch r.IntN(4) {
		case 0:
			members = append(members, fmt.Sprintf("consumer-%x", r.Uint64()))
		case 1:
			members = append(members, fmt.Sprintf("host.%d:%d-é", r.IntN(100), r.IntN(65536)))
		default:
			members = append(members, fmt.Sprintf("billing-%04x", r.IntN(1<<16)))
		}
	}
	slices.Sort(members)
	members = slices.Compact(members)
	var ps []rebalance.Partition
	for range r.IntN(6) {
		topic := fmt.Sprintf("t%d:%s.v%d", r.IntN(1000), []string{"a", "ß", "x-y"}[r.IntN(3)], r.IntN(3))
		n := r.IntN(120)
		for range n {
			id := int32(r.IntN(200))
			if r.IntN(10) == 0 {
				id = math.MaxInt32 - int32(r.IntN(1000))
			}
			ps = append(ps, rebalance.Partition{Topic: topic, ID: id})
		}
	}
	rebalance.Sort(ps)
	ps = slices.Compact(ps)
	return members, ps
}

func TestStrategyRandomInputs(t *testing.T) {
	t.Parallel()
	for _, s := range builtins {
		t.Run(s.Name(), func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(200) {
				func() {
					r := rand.New(rand.NewPCG(seed, 42))
					members, ps := randomGroup(r)
					defer func() {
						if t.Failed() {
							t.Logf("seed %d: %d members, %d partitions", seed, len(members), len(ps))
						}
					}()
					checkAssign(t, r, s, members, ps)
				}()
			}
		})
	}
}

// fixed returns a set assignment, for validation tests.
type fixed struct {
	out   map[string][]rebalance.Partition
	panic bool
}

func (f fixed) Name() string {
	if f.panic {
		panic("no name")
	}
	return "fixed"
}

func (f fixed) Assign([]string, []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	return f.out, nil
}

func TestComputeRejectsInvalidAssignments(t *testing.T) {
	t.Parallel()
	p0, p1 := rebalance.Partition{Topic: "t", ID: 0}, rebalance.Partition{Topic: "t", ID: 1}
	members, parts := []string{"a", "b"}, []rebalance.Partition{p0, p1}
	tests := []struct {
		name string
		s    rebalance.Strategy
		want string
	}{
		{"twice to one member", fixed{out: map[string][]rebalance.Partition{"a": {p0, p0, p1}, "b": nil}}, `given to "a" twice`},
		{"to two members", fixed{out: map[string][]rebalance.Partition{"a": {p0, p1}, "b": {p0}}}, `given to both "a" and "b"`},
		{"to nobody", fixed{out: map[string][]rebalance.Partition{"a": {p0}, "b": nil}}, "given to no member"},
		{"unknown member", fixed{out: map[string][]rebalance.Partition{"a": {p0, p1}, "b": nil, "c": nil}}, `unknown member "c"`},
		{"member left out", fixed{out: map[string][]rebalance.Partition{"a": {p0, p1}}}, `member "b" left out`},
		{"invented partition", fixed{out: map[string][]rebalance.Partition{"a": {p0, p1}, "b": {{Topic: "x", ID: 9}}}}, "unknown partition x:9"},
		{"name panics", fixed{panic: true}, "panicked: no name"},
	}
	for _, tt := range tests {
		_, err := rebalance.Compute(tt.s, members, parts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Compute() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// Validation looks positions up without a search in topics whose IDs are
// consecutive; IDs outside them, or in the gaps of a sparse topic, must
// still be caught.
func TestComputeRejectsInventedIDs(t *testing.T) {
	t.Parallel()
	s0, s2 := rebalance.Partition{Topic: "s", ID: 0}, rebalance.Partition{Topic: "s", ID: 2}
	t0, t1 := rebalance.Partition{Topic: "t", ID: 0}, rebalance.Partition{Topic: "t", ID: 1}
	members, parts := []string{"a"}, []rebalance.Partition{s0, s2, t0, t1}
	for _, invented := range []rebalance.Partition{{Topic: "s", ID: 1}, {Topic: "s", ID: 3}, {Topic: "t", ID: 2}, {Topic: "t", ID: 1 << 30}} {
		got := map[string][]rebalance.Partition{"a": {s0, s2, t0, t1, invented}}
		rebalance.Sort(got["a"])
		_, err := rebalance.Compute(fixed{out: got}, members, parts)
		if want := "unknown partition " + invented.String(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s invented: Compute() = %v, want an error containing %q", invented, err, want)
		}
	}
	if _, err := rebalance.Compute(fixed{out: map[string][]rebalance.Partition{"a": {t1, s2, t0, s0}}}, members, parts); err != nil {
		t.Errorf("every partition once, unsorted: Compute() = %v", err)
	}
}
