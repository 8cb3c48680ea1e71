package rebalance_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// stickyWorld is a group the property test changes one event at a time.
type stickyWorld struct {
	r       *rand.Rand
	members []rebalance.Member
	gone    []string // departed members, who may return
	parts   []rebalance.Partition
	nextID  map[string]int32
	prev    rebalance.Placement
	named   int
}

func (w *stickyWorld) newName() string {
	w.named++
	return fmt.Sprintf("m%02d", w.named)
}

// event applies one random event and names it.
func (w *stickyWorld) event() string {
	r := w.r
	pick := func() int { return r.IntN(len(w.members)) }
	switch e := r.IntN(10); {
	case e == 0 || len(w.members) == 0:
		w.members = append(w.members, rebalance.Member{Name: w.newName(), Weight: 1 + r.IntN(3)})
		return "join"
	case e == 1 || e == 2:
		i := pick()
		w.gone = append(w.gone, w.members[i].Name)
		w.members = slices.Delete(w.members, i, i+1)
		if e == 1 {
			return "leave"
		}
		return "crash" // the same to the pure function: the member is gone
	case e == 3:
		t := fmt.Sprintf("t%d", r.IntN(4))
		for range 1 + r.IntN(20) {
			w.parts = append(w.parts, rebalance.Partition{Topic: t, ID: w.nextID[t]})
			w.nextID[t]++
		}
		return "add partitions"
	case e == 4:
		w.parts = slices.Clone(w.parts) // the previous placement may hold the old one
		for range min(len(w.parts), 1+r.IntN(15)) {
			i := r.IntN(len(w.parts))
			w.parts = slices.Delete(w.parts, i, i+1)
		}
		return "remove partitions"
	case e == 5:
		w.members[pick()].Weight = r.IntN(5)
		return "weight change"
	case e == 6:
		w.members[pick()].Drained = true
		return "drain"
	case e == 7:
		w.members[pick()].Drained = false
		return "undrain"
	default:
		if len(w.gone) == 0 {
			return "nothing"
		}
		i := r.IntN(len(w.gone))
		w.members = append(w.members, rebalance.Member{Name: w.gone[i], Weight: 1 + r.IntN(3)})
		w.gone = slices.Delete(w.gone, i, i+1)
		return "return"
	}
}

// TestStickyProperties runs random sequences of events through Sticky
// and checks after each that the result is deterministic and independent
// of input order, gives every member exactly its share, loses and
// duplicates nothing, moves exactly the minimum (computed here
// independently), and gives a returning member back its own partitions
// when the minimum lets it.
func TestStickyProperties(t *testing.T) {
	const sequences, steps = 100, 40
	returned := 0
	for seq := range sequences {
		w := &stickyWorld{r: rand.New(rand.NewPCG(uint64(seq), 27)), nextID: map[string]int32{}}
		for range 3 {
			w.event() // a join first, then anything
		}
		for step := range steps {
			var what []string
			for range 1 + w.r.IntN(2) {
				what = append(what, w.event())
			}
			label := fmt.Sprintf("sequence %d step %d %v", seq, step, what)
			res, err := rebalance.Sticky(w.prev, w.members, w.parts)
			active := slices.ContainsFunc(w.members, func(m rebalance.Member) bool { return m.Weight > 0 && !m.Drained })
			if !active && len(w.parts) > 0 {
				if !errors.Is(err, rebalance.ErrNoMembers) {
					t.Fatalf("%s: nobody can take %d partitions: got %v, want ErrNoMembers", label, len(w.parts), err)
				}
				continue // the caller keeps the previous placement
			}
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			checkDeterministic(t, label, w, res)
			checkSticky(t, label, w.prev, w.members, w.parts, res)
			if len(what) == 1 && what[0] == "return" && checkReturn(t, label, w.prev, w.members[len(w.members)-1].Name, w.members, w.parts, res) {
				returned++
			}
			w.prev = res.Next
		}
	}
	t.Logf("%d returns checked", returned)
	if returned < 20 {
		t.Errorf("only %d returns were checked; the test no longer exercises them", returned)
	}
}

// checkDeterministic runs Sticky again, and again on shuffled members
// and partitions, and wants the same result.
func checkDeterministic(t *testing.T, label string, w *stickyWorld, want rebalance.Result) {
	t.Helper()
	again, err := rebalance.Sticky(w.prev, w.members, w.parts)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("%s: second run differs: %v", label, err)
	}
	ms, ps := slices.Clone(w.members), slices.Clone(w.parts)
	w.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	w.r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	shuffled, err := rebalance.Sticky(w.prev, ms, ps)
	if err != nil || !reflect.DeepEqual(shuffled, want) {
		t.Fatalf("%s: shuffled inputs give another result: %v", label, err)
	}
}

// wantShares computes the shares the simple way: floor of n*w/W, then one
// more to the largest remainders, ties to members holding more than the
// floor, then by name.
func wantShares(members []rebalance.Member, n int, held map[string]int) map[string]int {
	total := 0
	for _, m := range members {
		if m.Weight > 0 && !m.Drained {
			total += m.Weight
		}
	}
	out := map[string]int{}
	type c struct {
		name  string
		rem   int
		saves bool
	}
	var cs []c
	left := n
	for _, m := range members {
		out[m.Name] = 0
		if m.Weight == 0 || m.Drained {
			continue
		}
		out[m.Name] = n * m.Weight / total
		left -= out[m.Name]
		cs = append(cs, c{m.Name, n * m.Weight % total, held[m.Name] > out[m.Name]})
	}
	slices.SortFunc(cs, func(a, b c) int {
		if a.rem != b.rem {
			return cmp.Compare(b.rem, a.rem)
		}
		if a.saves != b.saves {
			if a.saves {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.name, b.name)
	})
	for _, c := range cs[:left] {
		out[c.name]++
	}
	return out
}

// checkSticky checks res against the rules of Sticky, from maps.
func checkSticky(t *testing.T, label string, prev rebalance.Placement, members []rebalance.Member, parts []rebalance.Partition, res rebalance.Result) {
	t.Helper()
	was := map[rebalance.Partition]string{}
	for m, ps := range prev.Owners() {
		for _, p := range ps {
			was[p] = m
		}
	}
	active := map[string]bool{}
	for _, m := range members {
		active[m.Name] = m.Weight > 0 && !m.Drained
	}
	held := map[string]int{}
	orphans := 0
	for _, p := range parts {
		if o, ok := was[p]; ok && active[o] {
			held[o]++
		} else {
			orphans++
		}
	}
	shares := wantShares(members, len(parts), held)
	minimum := orphans
	for m, h := range held {
		minimum += max(0, h-shares[m])
	}

	now := map[rebalance.Partition]string{}
	if len(res.Assigned()) != len(members) {
		t.Fatalf("%s: %d members assigned, want %d", label, len(res.Assigned()), len(members))
	}
	for m, ps := range res.Assigned() {
		if len(ps) != shares[m] {
			t.Fatalf("%s: %s holds %d, want its share %d", label, m, len(ps), shares[m])
		}
		if of := res.Of(m); !slices.Equal(of, ps) {
			t.Fatalf("%s: Of(%s) = %v, Assigned gives %v", label, m, of, ps)
		}
		if !slices.IsSortedFunc(ps, rebalance.Compare) {
			t.Fatalf("%s: %s's partitions not sorted", label, m)
		}
		kept := 0
		for _, p := range ps {
			if o, dup := now[p]; dup {
				t.Fatalf("%s: %s given to %s and %s", label, p, o, m)
			}
			now[p] = m
			if was[p] == m {
				kept++
			}
		}
		// Nothing moves off a member within its share; one above gives
		// exactly its excess.
		if want := min(held[m], shares[m]); kept != want {
			t.Fatalf("%s: %s kept %d, want %d (held %d, share %d)", label, m, kept, want, held[m], shares[m])
		}
	}
	if len(now) != len(parts) {
		t.Fatalf("%s: %d partitions assigned, want %d", label, len(now), len(parts))
	}
	moved := 0
	for _, p := range parts {
		if _, ok := now[p]; !ok {
			t.Fatalf("%s: %s lost", label, p)
		}
		if was[p] != now[p] {
			moved++
		}
	}
	if moved != minimum || res.Moved != minimum {
		t.Fatalf("%s: moved %d (reported %d), want the minimum %d", label, moved, res.Moved, minimum)
	}

	// The next placement records the assignment, homes for partitions of
	// departed owners, and only names it refers to, sorted.
	next := res.Next
	if !slices.Equal(next.Parts, slices.SortedFunc(slices.Values(parts), rebalance.Compare)) {
		t.Fatalf("%s: next placement's partitions differ", label)
	}
	owners := next.Owners()
	for m, ps := range res.Assigned() {
		if len(ps) > 0 && !slices.Equal(owners[m], ps) {
			t.Fatalf("%s: next placement's owners differ for %s", label, m)
		}
	}
	if !slices.IsSorted(next.Names) || len(slices.Compact(slices.Clone(next.Names))) != len(next.Names) {
		t.Fatalf("%s: names not sorted and distinct: %v", label, next.Names)
	}
	if len(next.Names) > len(parts)+len(members) {
		t.Fatalf("%s: %d names for %d partitions and %d members", label, len(next.Names), len(parts), len(members))
	}
	homes, oldHomes := next.Homes(), prev.Homes()
	for i := range next.Names {
		if !slices.Contains(next.Owner, int32(i)) && !slices.Contains(next.Home, int32(i)) {
			t.Fatalf("%s: name %q referred to by nothing", label, next.Names[i])
		}
	}
	for _, p := range parts {
		want := oldHomes[p]
		if o, ok := was[p]; ok && !active[o] {
			want = o
		}
		if want == now[p] {
			want = ""
		}
		if homes[p] != want {
			t.Fatalf("%s: home of %s is %q, want %q", label, p, homes[p], want)
		}
	}
}

// checkReturn checks, when name has just returned and is the only member
// below its share, that it got back as many of its own partitions (those
// whose home it is) as the minimum allows: those without an owner, plus
// from each member above its share up to its excess, up to its share. It
// reports whether the check applied.
func checkReturn(t *testing.T, label string, prev rebalance.Placement, name string, members []rebalance.Member, parts []rebalance.Partition, res rebalance.Result) bool {
	t.Helper()
	homes, owners := prev.Homes(), map[rebalance.Partition]string{}
	for m, ps := range prev.Owners() {
		for _, p := range ps {
			owners[p] = m
		}
	}
	active := map[string]bool{}
	for _, m := range members {
		active[m.Name] = m.Weight > 0 && !m.Drained
	}
	held, mine := map[string]int{}, map[string]int{}
	for _, p := range parts {
		o := owners[p]
		if active[o] {
			held[o]++
		}
		if homes[p] == name {
			if !active[o] {
				o = ""
			}
			mine[o]++
		}
	}
	shares := map[string]int{}
	for m, ps := range res.Assigned() {
		shares[m] = len(ps)
	}
	for m, s := range shares {
		if m != name && held[m] < s {
			return false // another member competes for the moves
		}
	}
	avail := mine[""]
	for m, n := range mine {
		if m != "" {
			avail += min(n, max(0, held[m]-shares[m]))
		}
	}
	got := 0
	for _, p := range res.Assigned()[name] {
		if homes[p] == name {
			got++
		}
	}
	if want := min(shares[name], avail); got != want {
		t.Fatalf("%s: %s returned and got %d of its own back, want %d", label, name, got, want)
	}
	return true
}
