package rebalance_test

import (
	"fmt"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// BenchmarkSticky times Sticky at 100 members x 10,000 partitions and
// 1,000 x 100,000 (over 10 topics), from the placement of a first
// assignment: steady (same members: nothing moves), join (one member
// more) and leave (one member less); alone, then with one member's share
// taken ([rebalance.Result.Of]), then with every member's
// ([rebalance.Result.Assigned]).
func BenchmarkSticky(b *testing.B) {
	for _, c := range []struct{ members, parts int }{{100, 10_000}, {1_000, 100_000}} {
		names, parts := group(1, c.members+1, c.parts, 10)
		ms := make([]rebalance.Member, len(names))
		for i, n := range names {
			ms[i] = rebalance.Member{Name: n, Weight: 1}
		}
		before := ms[:len(ms)-1]
		first, err := rebalance.Sticky(rebalance.Placement{}, before, parts)
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range []struct {
			name    string
			members []rebalance.Member
		}{{"steady", before}, {"join", ms}, {"leave", before[1:]}} {
			b.Run(fmt.Sprintf("%dx%d/%s", c.members, c.parts, ev.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := rebalance.Sticky(first.Next, ev.members, parts); err != nil {
						b.Fatal(err)
					}
				}
			})
			// What a member does: compute, then take its own share.
			b.Run(fmt.Sprintf("%dx%d/%s+Of", c.members, c.parts, ev.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := rebalance.Sticky(first.Next, ev.members, parts)
					if err != nil {
						b.Fatal(err)
					}
					r.Of(names[len(names)/2])
				}
			})
			// What a leader of a Kafka group does: every member's share.
			b.Run(fmt.Sprintf("%dx%d/%s+Assigned", c.members, c.parts, ev.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := rebalance.Sticky(first.Next, ev.members, parts)
					if err != nil {
						b.Fatal(err)
					}
					r.Assigned()
				}
			})
		}
	}
}
