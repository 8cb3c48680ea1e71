package assignment_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/rebalance"
)

// store is the record's nodes as ZooKeeper would hold them: the head's
// data and the share nodes under it, written as a writer does (create,
// set the head, delete the stale).
type store struct {
	head   []byte
	shares map[string][]byte
}

func (s *store) write(t testing.TB, enc assignment.Encoded) {
	t.Helper()
	if s.shares == nil {
		s.shares = make(map[string][]byte)
	}
	for _, n := range enc.Create {
		if _, ok := s.shares[n.Name]; ok {
			t.Fatalf("node %s created twice: share nodes are never written over", n.Name)
		}
		s.shares[n.Name] = n.Data
	}
	s.head = enc.HeadData
	for _, n := range enc.Stale {
		if _, ok := s.shares[n]; !ok {
			t.Fatalf("stale node %s does not exist", n)
		}
		delete(s.shares, n)
	}
}

func members(names ...string) []rebalance.Member {
	var ms []rebalance.Member
	for _, n := range names {
		ms = append(ms, rebalance.Member{Name: n, Weight: 1})
	}
	return ms
}

func parts(topics, per int) []rebalance.Partition {
	var ps []rebalance.Partition
	for t := range topics {
		for id := range per {
			ps = append(ps, rebalance.Partition{Topic: fmt.Sprintf("events-%02d", t), ID: int32(id)})
		}
	}
	rebalance.Sort(ps)
	return ps
}

// check reads the record back as a member and as the computing member
// would, and compares with what was encoded.
func check(t *testing.T, s *store, r rebalance.Result, in assignment.Input) assignment.Head {
	t.Helper()
	h, err := assignment.DecodeHead(s.head)
	if err != nil {
		t.Fatalf("DecodeHead: %v", err)
	}
	if h.MembersZxid != in.MembersZxid || h.PartitionsZxid != in.PartitionsZxid {
		t.Fatalf("zxids %d %d, want %d %d", h.MembersZxid, h.PartitionsZxid, in.MembersZxid, in.PartitionsZxid)
	}
	if len(h.Members) != len(in.Members) {
		t.Fatalf("%d members, want %d", len(h.Members), len(in.Members))
	}
	for _, m := range in.Members {
		e, ok := h.Of(m.Name)
		if !ok || e.Member != m {
			t.Fatalf("head's entry of %q = %+v, %v; want %+v", m.Name, e, ok, m)
		}
		var data []byte
		if e.Node != "" {
			if data, ok = s.shares[e.Node]; !ok {
				t.Fatalf("%q's node %s is missing", m.Name, e.Node)
			}
		}
		sh, err := assignment.DecodeShare(e, data)
		if err != nil {
			t.Fatalf("DecodeShare of %q: %v", m.Name, err)
		}
		if want := r.Of(m.Name); !slices.Equal(sh.Owned, want) && len(want)+len(sh.Owned) > 0 {
			t.Fatalf("%q's share: %d partitions, want %d", m.Name, len(sh.Owned), len(want))
		}
	}
	pl, err := assignment.Decode(h, s.shares)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !reflect.DeepEqual(pl, r.Next) {
		t.Fatalf("Decode gives back another placement:\n got %d names %v, %d homes\nwant %d names %v, %d homes",
			len(pl.Names), pl.Names, len(pl.Homes()), len(r.Next.Names), r.Next.Names, len(r.Next.Homes()))
	}
	return h
}

// TestRoundTripSticky runs random sequences of joins, leaves, drains,
// weight changes and partition changes through Sticky, writing each
// result as a record over the one before: every member reads back
// exactly its share, the whole record decodes to Sticky's placement
// exactly (homes included), only the shares that changed are created,
// and the store holds exactly the nodes the head names.
func TestRoundTripSticky(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 27))
		all := make([]string, 12)
		for i := range all {
			all[i] = fmt.Sprintf("m %02d", i) // a space, as names may hold
		}
		present := map[string]rebalance.Member{}
		for _, n := range all[:4] {
			present[n] = rebalance.Member{Name: n, Weight: 1}
		}
		ps := parts(3, 40)
		var s store
		var prevHead assignment.Head
		var prev rebalance.Placement
		for step := range 60 {
			switch r.IntN(6) {
			case 0: // join or return
				n := all[r.IntN(len(all))]
				present[n] = rebalance.Member{Name: n, Weight: 1}
			case 1: // leave
				if len(present) > 1 {
					delete(present, slices.Sorted(maps.Keys(present))[r.IntN(len(present))])
				}
			case 2: // drain or undrain
				n := slices.Sorted(maps.Keys(present))[r.IntN(len(present))]
				m := present[n]
				m.Drained = !m.Drained
				present[n] = m
			case 3: // weight
				n := slices.Sorted(maps.Keys(present))[r.IntN(len(present))]
				m := present[n]
				m.Weight = r.IntN(4)
				present[n] = m
			case 4: // partitions
				ps = parts(1+r.IntN(4), 10+r.IntN(60))
			case 5: // nothing
			}
			ms := slices.Collect(maps.Values(present))
			res, err := rebalance.Sticky(prev, ms, ps)
			if errors.Is(err, rebalance.ErrNoMembers) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			in := assignment.Input{MembersZxid: int64(step * 2), PartitionsZxid: int64(step*2 + 1), Members: ms, Placement: res.Next}
			enc, err := assignment.Encode(in, prevHead)
			if err != nil {
				t.Fatalf("seed %d step %d: Encode: %v", seed, step, err)
			}
			if enc.Head.Generation != prevHead.Generation+1 {
				t.Fatalf("generation %d after %d", enc.Head.Generation, prevHead.Generation)
			}
			// Only the members whose share changed get a new node.
			changed := 0
			for _, e := range enc.Head.Members {
				if p, ok := prevHead.Of(e.Name); e.Count > 0 && (!ok || !slices.Equal(prev.Owners()[e.Name], res.Next.Owners()[e.Name]) || !maps.Equal(homesOf(prev, e.Name), homesOf(res.Next, e.Name)) || p.Node == "") {
					changed++
				}
			}
			if len(enc.Create) != changed {
				t.Fatalf("seed %d step %d: %d nodes created, %d shares changed", seed, step, len(enc.Create), changed)
			}
			s.write(t, enc)
			prevHead = check(t, &s, res, in)
			if !reflect.DeepEqual(prevHead, enc.Head) {
				t.Fatalf("DecodeHead gives back another head")
			}
			if got := assignment.Orphans(prevHead, slices.Collect(maps.Keys(s.shares))); len(got) > 0 {
				t.Fatalf("orphans after a clean write: %v", got)
			}
			if n := len(s.shares); n != len(enc.Head.Members)-countEmpty(enc.Head) {
				t.Fatalf("%d share nodes for %d members with partitions", n, len(enc.Head.Members)-countEmpty(enc.Head))
			}
			prev = res.Next
		}
	}
}

func countEmpty(h assignment.Head) int {
	n := 0
	for _, e := range h.Members {
		if e.Node == "" {
			n++
		}
	}
	return n
}

// homesOf returns the homes of the partitions owner owns in pl.
func homesOf(pl rebalance.Placement, owner string) map[rebalance.Partition]string {
	out := map[rebalance.Partition]string{}
	for p, h := range pl.Homes() {
		for i, q := range pl.Parts {
			if q == p && pl.Names[pl.Owner[i]] == owner {
				out[p] = h
			}
		}
	}
	return out
}

// TestShareData pins the share format: a first assignment is
// round-robin, so each member's IDs in a topic are one stepped range.
func TestShareData(t *testing.T) {
	t.Parallel()
	res, err := rebalance.Sticky(rebalance.Placement{}, members("a", "b", "c"), parts(2, 30))
	if err != nil {
		t.Fatal(err)
	}
	// b leaves: its partitions get b as their home.
	next, err := rebalance.Sticky(res.Next, members("a", "c"), parts(2, 30))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := assignment.Encode(assignment.Input{Members: members("a", "c"), Placement: next.Next}, assignment.Head{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range enc.Head.Members {
		for _, n := range enc.Create {
			if n.Name == e.Node {
				got = append(got, string(n.Data))
			}
		}
	}
	want := []string{
		"o events-00 0-1,3,6-7,9,12-13,15,18-19,21,24-25,27\no events-01 0-1,3,6-7,9,12-13,15,18-19,21,24-25,27\nh events-00 1-25/6 b\nh events-01 1-25/6 b\n",
		"o events-00 2,4-5,8,10-11,14,16-17,20,22-23,26,28-29\no events-01 2,4-5,8,10-11,14,16-17,20,22-23,26,28-29\nh events-00 4-28/6 b\nh events-01 4-28/6 b\n",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("share nodes:\n got %q\nwant %q", got, want)
	}
	wantHead := "zkalloc-assignment 1\ng 1 0 0\n" +
		fmt.Sprintf("m 1 0 1-%016x 30 a\n", assignment.Sum([]byte(want[0]))) +
		fmt.Sprintf("m 1 0 1-%016x 30 c\n", assignment.Sum([]byte(want[1])))
	if string(enc.HeadData) != wantHead {
		t.Fatalf("head:\n got %q\nwant %q", enc.HeadData, wantHead)
	}
}

// TestSteadyWritesNothingNew: a record computed again from the same
// inputs names the same nodes, creates none and leaves none stale, so a
// member that only checks the head's hash for itself reads nothing more.
func TestSteadyWritesNothingNew(t *testing.T) {
	t.Parallel()
	ms := members("a", "b", "c", "d")
	res, err := rebalance.Sticky(rebalance.Placement{}, ms, parts(4, 100))
	if err != nil {
		t.Fatal(err)
	}
	first, err := assignment.Encode(assignment.Input{Members: ms, Placement: res.Next}, assignment.Head{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := assignment.Encode(assignment.Input{Members: ms, Placement: res.Next, MembersZxid: 9}, first.Head)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Create) != 0 || len(again.Stale) != 0 {
		t.Fatalf("steady: created %d, stale %v; want none", len(again.Create), again.Stale)
	}
	for i, e := range again.Head.Members {
		if e.Node != first.Head.Members[i].Node {
			t.Fatalf("%q's node %s, was %s", e.Name, e.Node, first.Head.Members[i].Node)
		}
	}
	// d leaves: its node goes stale, and a, b and c, which take its
	// partitions, get new nodes of generation 3.
	left := members("a", "b", "c")
	res2, err := rebalance.Sticky(res.Next, left, parts(4, 100))
	if err != nil {
		t.Fatal(err)
	}
	third, err := assignment.Encode(assignment.Input{Members: left, Placement: res2.Next}, again.Head)
	if err != nil {
		t.Fatal(err)
	}
	var created, want []string
	for _, n := range third.Create {
		created = append(created, n.Name)
	}
	for _, e := range third.Head.Members {
		want = append(want, assignment.NodeName(3, e.Sum))
	}
	slices.Sort(want)
	if !slices.Equal(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	var stale []string
	for _, e := range first.Head.Members {
		stale = append(stale, e.Node)
	}
	slices.Sort(stale)
	if !slices.Equal(third.Stale, stale) {
		t.Fatalf("stale %v, want %v", third.Stale, stale)
	}
}

// TestOrphans: a writer whose compare-and-set failed left nodes of the
// generation it tried; the next writer's head, of that generation or a
// later one, names them as orphans, but not the nodes a writer of the
// next generation may be creating now.
func TestOrphans(t *testing.T) {
	t.Parallel()
	n := func(gen int64, sum uint64) string { return assignment.NodeName(gen, sum) }
	h := assignment.Head{Generation: 5, Members: []assignment.Entry{{Node: n(3, 1)}, {Node: n(5, 2)}, {}}}
	children := []string{n(5, 2), n(3, 1), n(5, 3), n(4, 2), n(6, 1), n(7, 9), "junk", "0" + n(5, 2), "3-x", "3-0"}
	want := []string{"0" + n(5, 2), "3-0", "3-x", n(4, 2), n(5, 3), "junk"}
	slices.Sort(want)
	if got := assignment.Orphans(h, children); !slices.Equal(got, want) {
		t.Fatalf("Orphans = %v, want %v", got, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	p := func(topic string, id int32) rebalance.Partition { return rebalance.Partition{Topic: topic, ID: id} }
	ok := rebalance.Placement{Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 0), p("t", 1)}, Owner: []int32{0, 0}}
	big := make([]rebalance.Partition, 0, 200_000)
	for id := range int32(200_000) {
		big = append(big, p("t", id*2))
	}
	tests := []struct {
		name string
		in   assignment.Input
		want error
	}{
		{"ok", assignment.Input{Members: members("a"), Placement: ok}, nil},
		{"owner not a member", assignment.Input{Members: members("b"), Placement: ok}, assignment.ErrInvalid},
		{"no owner", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: ok.Parts, Owner: []int32{0, -1}}}, assignment.ErrInvalid},
		{"unsorted", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 1), p("t", 0)}, Owner: []int32{0, 0}}}, assignment.ErrInvalid},
		{"owner out of range", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: ok.Parts, Owner: []int32{0, 1}}}, assignment.ErrInvalid},
		{"home is owner", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: ok.Parts, Owner: []int32{0, 0}, Home: []int32{-1, 0}}}, assignment.ErrInvalid},
		{"lengths", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: ok.Parts, Owner: []int32{0}}}, assignment.ErrInvalid},
		{"bad topic", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: []rebalance.Partition{p("t:x", 0)}, Owner: []int32{0}}}, assignment.ErrInvalid},
		{"bad member name", assignment.Input{Members: members("a/b"), Placement: rebalance.Placement{}}, assignment.ErrInvalid},
		{"member twice", assignment.Input{Members: members("a", "a"), Placement: ok}, assignment.ErrInvalid},
		{"weight", assignment.Input{Members: []rebalance.Member{{Name: "a", Weight: -1}}, Placement: ok}, assignment.ErrInvalid},
		{"negative zxid", assignment.Input{Members: members("a"), Placement: ok, MembersZxid: -1}, assignment.ErrInvalid},
		{"share too large", assignment.Input{Members: members("a"), Placement: rebalance.Placement{Names: []string{"a"}, Parts: big, Owner: make([]int32, len(big))}}, nil},
		{"scattered share too large", assignment.Input{Members: members("a"), Placement: scattered(200_000)}, assignment.ErrTooLarge},
		{"head too large", assignment.Input{Members: longNames(2_500)}, assignment.ErrTooLarge},
		{"head at its limit", assignment.Input{Members: longNames(1_700)}, nil},
		{"name too long", assignment.Input{Members: members(strings.Repeat("n", rebalance.MaxNameLen+1))}, assignment.ErrInvalid},
	}
	for _, tt := range tests {
		_, err := assignment.Encode(tt.in, assignment.Head{})
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: Encode = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// scattered is n partitions of one topic owned by "a", with gaps that
// no stepped range can cover: 7 bytes an ID or so.
func scattered(n int) rebalance.Placement {
	pl := rebalance.Placement{Names: []string{"a"}}
	id := int32(1_000_000)
	for i := range n {
		pl.Parts = append(pl.Parts, rebalance.Partition{Topic: "t", ID: id})
		pl.Owner = append(pl.Owner, 0)
		id += int32(2 + i%2)
	}
	return pl
}

// TestDecodeErrors: a record whose shares overlap, or that names a node
// the store lacks, or whose node differs from its hash, is refused.
func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	share := func(data string) (string, []byte) {
		return assignment.NodeName(1, assignment.Sum([]byte(data))), []byte(data)
	}
	na, da := share("o t 0-9\n")
	nb, db := share("o t 9-11\n")      // 9 is a's too: dense path
	nc, dc := share("o t 5,1000000\n") // 5 is a's too: sparse path
	head := func(es ...assignment.Entry) assignment.Head { return assignment.Head{Generation: 1, Members: es} }
	a := assignment.Entry{Member: rebalance.Member{Name: "a", Weight: 1}, Node: na, Sum: assignment.Sum(da), Count: 10}
	b := assignment.Entry{Member: rebalance.Member{Name: "b", Weight: 1}, Node: nb, Sum: assignment.Sum(db), Count: 3}
	c := assignment.Entry{Member: rebalance.Member{Name: "c", Weight: 1}, Node: nc, Sum: assignment.Sum(dc), Count: 2}
	store := map[string][]byte{na: da, nb: db, nc: dc}
	tests := []struct {
		name   string
		h      assignment.Head
		store  map[string][]byte
		want   error
		wantOK bool
	}{
		{"one share", head(a), store, nil, true},
		{"overlap dense", head(a, b), store, assignment.ErrInvalid, false},
		{"overlap sparse", head(a, c), store, assignment.ErrInvalid, false},
		{"missing node", head(a), map[string][]byte{}, assignment.ErrInvalid, false},
		{"other data", head(a), map[string][]byte{na: db}, assignment.ErrStale, false},
	}
	for _, tt := range tests {
		_, err := assignment.Decode(tt.h, tt.store)
		if tt.wantOK != (err == nil) || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: Decode = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// longNames is n members of the longest names.
func longNames(n int) []rebalance.Member {
	var ms []rebalance.Member
	for i := range n {
		name := fmt.Sprintf("%05d", i) + strings.Repeat("n", rebalance.MaxNameLen-5)
		ms = append(ms, rebalance.Member{Name: name, Weight: 1})
	}
	return ms
}

// TestNewerFormat: a head of a later format than this version's is
// ErrNewerFormat, not ErrInvalid, so that a member waits for it instead of
// writing over it; a head that only looks like one is ErrInvalid.
func TestNewerFormat(t *testing.T) {
	t.Parallel()
	for _, data := range []string{"zkalloc-assignment 2\n", "zkalloc-assignment 17\nwhatever it holds\n"} {
		if _, err := assignment.DecodeHead([]byte(data)); !errors.Is(err, assignment.ErrNewerFormat) || errors.Is(err, assignment.ErrInvalid) {
			t.Errorf("DecodeHead(%q) = %v, want ErrNewerFormat alone", data, err)
		}
	}
	for _, data := range []string{"", "zkalloc-assignment 0\n", "zkalloc-assignment 02\n", "zkalloc-assignment 2", "zkalloc-assignment two\n", "zkalloc-assignment 1\n"} {
		if _, err := assignment.DecodeHead([]byte(data)); !errors.Is(err, assignment.ErrInvalid) || errors.Is(err, assignment.ErrNewerFormat) {
			t.Errorf("DecodeHead(%q) = %v, want ErrInvalid alone", data, err)
		}
	}
}
