package assignment_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/rebalance"
)

// shape is a group of n members and p partitions over 10 topics, as
// rebalance's BenchmarkSticky builds it, with the records of a first
// assignment, of one member leaving after it, and of a churned group
// (30 joins and leaves after the first assignment).
type shape struct {
	names                  []string
	ms                     []rebalance.Member
	first, leave, churned  assignment.Encoded
	firstIn, leaveIn, chIn assignment.Input
	// The share nodes after each.
	firstAll, leaveAll, churnedAll map[string][]byte
}

func newShape(tb testing.TB, n, p int) shape {
	var s shape
	for i := range n {
		s.names = append(s.names, fmt.Sprintf("consumer-%016x", uint64(i)*0x9e3779b97f4a7c15))
	}
	slices.Sort(s.names)
	s.ms = members(s.names...)
	ps := parts(10, p/10)
	enc := func(ms []rebalance.Member, prev rebalance.Placement, prevHead assignment.Head) (assignment.Input, assignment.Encoded, rebalance.Placement) {
		r, err := rebalance.Sticky(prev, ms, ps)
		if err != nil {
			tb.Fatal(err)
		}
		in := assignment.Input{Members: ms, Placement: r.Next}
		e, err := assignment.Encode(in, prevHead)
		if err != nil {
			tb.Fatal(err)
		}
		return in, e, r.Next
	}
	var first rebalance.Placement
	s.firstIn, s.first, first = enc(s.ms, rebalance.Placement{}, assignment.Head{})
	s.leaveIn, s.leave, _ = enc(s.ms[1:], first, s.first.Head)
	s.firstAll = apply(nil, s.first)
	s.leaveAll = apply(s.firstAll, s.leave)
	s.churnedAll = s.firstAll
	// Churn: 30 events, each a member leaving or one of the departed
	// coming back.
	r := rand.New(rand.NewPCG(1, 2))
	present := slices.Clone(s.ms)
	var gone []rebalance.Member
	pl, head := first, s.first.Head
	for range 30 {
		if len(gone) > 0 && r.IntN(2) == 0 {
			k := r.IntN(len(gone))
			present = append(present, gone[k])
			gone = slices.Delete(gone, k, k+1)
		} else {
			k := r.IntN(len(present))
			gone = append(gone, present[k])
			present = slices.Delete(present, k, k+1)
		}
		s.chIn, s.churned, pl = enc(present, pl, head)
		s.churnedAll = apply(s.churnedAll, s.churned)
		head = s.churned.Head
	}
	return s
}

// apply returns the share nodes after e is written over store (which
// it does not modify): e's created, without e's stale.
func apply(store map[string][]byte, e assignment.Encoded) map[string][]byte {
	out := maps.Clone(store)
	if out == nil {
		out = map[string][]byte{}
	}
	for _, n := range e.Create {
		out[n.Name] = n.Data
	}
	for _, n := range e.Stale {
		delete(out, n)
	}
	return out
}

func sizes(e assignment.Encoded) (created, bytes int) {
	for _, n := range e.Create {
		bytes += len(n.Data)
	}
	return len(e.Create), bytes
}

// BenchmarkRecord times the codec at 100 members x 10,000 partitions
// and 1,000 x 100,000: Encode of a first record and of a leave over it;
// what a member reads (DecodeHead, then its own share with DecodeShare);
// and what the computing member reads (DecodeHead, then Decode of every
// share). It reports the head's bytes and the shares' bytes (whole
// record), and for encode the nodes created and their bytes.
func BenchmarkRecord(b *testing.B) {
	for _, c := range []struct{ members, parts int }{{100, 10_000}, {1_000, 100_000}} {
		s := newShape(b, c.members, c.parts)
		me := s.names[len(s.names)/2]
		for _, ev := range []struct {
			name string
			in   assignment.Input
			prev assignment.Head
			enc  assignment.Encoded
			all  map[string][]byte
		}{
			{"first", s.firstIn, assignment.Head{}, s.first, s.firstAll},
			{"leave", s.leaveIn, s.first.Head, s.leave, s.leaveAll},
		} {
			name := fmt.Sprintf("%dx%d/%s", c.members, c.parts, ev.name)
			b.Run(name+"/Encode", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := assignment.Encode(ev.in, ev.prev); err != nil {
						b.Fatal(err)
					}
				}
				n, bytes := sizes(ev.enc)
				b.ReportMetric(float64(n), "created")
				b.ReportMetric(float64(bytes), "created-B")
				b.ReportMetric(float64(len(ev.enc.HeadData)), "head-B")
			})
			b.Run(name+"/DecodeOwn", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					h, err := assignment.DecodeHead(ev.enc.HeadData)
					if err != nil {
						b.Fatal(err)
					}
					e, _ := h.Of(me)
					if _, err := assignment.DecodeShare(e, ev.all[e.Node]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/DecodeAll", func(b *testing.B) {
				b.ReportAllocs()
				total := 0
				for _, d := range ev.all {
					total += len(d)
				}
				for b.Loop() {
					h, err := assignment.DecodeHead(ev.enc.HeadData)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := assignment.Decode(h, ev.all); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(total), "shares-B")
			})
		}
	}
}

// TestRecordSizes logs the record's sizes at 1,000 members x 100,000
// partitions (run with -v; docs/sticky.md quotes them), and checks that
// they stay where docs/sticky.md says: a head under 100 KB, each share
// under 4 KB, the whole record under MaxNodeBytes, after a first
// assignment, a leave and a churn of 30 joins and leaves.
func TestRecordSizes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 100,000-partition group")
	}
	s := newShape(t, 1_000, 100_000)
	for _, c := range []struct {
		name string
		enc  assignment.Encoded
		all  map[string][]byte
	}{
		{"first", s.first, s.firstAll},
		{"leave", s.leave, s.leaveAll},
		{"churned", s.churned, s.churnedAll},
	} {
		n, created := sizes(c.enc)
		maxShare, total := 0, 0
		for _, nd := range c.enc.Create {
			maxShare = max(maxShare, len(nd.Data))
		}
		for _, d := range c.all {
			total += len(d)
		}
		t.Logf("%s: head %d B, %d nodes created (%d B, largest %d B), whole record's shares %d B, %d stale",
			c.name, len(c.enc.HeadData), n, created, maxShare, total, len(c.enc.Stale))
		if len(c.enc.HeadData) > 100_000 || maxShare > 4_000 || total > assignment.MaxNodeBytes {
			t.Errorf("%s: sizes above what docs/sticky.md says", c.name)
		}
	}
}
