package rebalance_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// FuzzSticky feeds Sticky placements as a record read back from storage
// could hold them (owners and homes out of range, names invalid or
// listed twice, partitions unsorted or repeated, homes equal to owners),
// with members and partitions drawn from the same bytes. Sticky must not
// panic; what it refuses must wrap ErrInvalid or ErrNoMembers; what it
// accepts must satisfy every rule the property test checks.
func FuzzSticky(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 4, 0, 0, 1, 2, 0, 1, 1, 1, 0, 2, 2, 0, 3, 3, 0, 1, 1, 0, 0, 2, 1, 0, 6})
	f.Add([]byte{2, 0, 0, 3, 0, 1, 0, 2, 0, 1, 5, 0, 2, 1, 1, 0, 0, 4, 0, 3, 1, 0})
	f.Add([]byte{5, 0, 1, 2, 3, 4, 11, 0, 0, 2, 2, 0, 1, 3, 3, 0, 2, 4, 4, 0, 3, 5, 5, 1, 4, 6, 6, 1, 5, 7, 7, 4, 0, 1, 0, 1, 2, 0, 2, 3, 0, 3, 1, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		pool := []string{"a", "b", "c", "d", "e", "", "a/b"}
		topics := []string{"t", "u"}
		part := func() rebalance.Partition {
			return rebalance.Partition{Topic: topics[next()%2], ID: int32(next() % 8)}
		}
		var prev rebalance.Placement
		for range next() % 6 {
			prev.Names = append(prev.Names, pool[next()%len(pool)])
		}
		withHomes := next()%4 != 0
		for range next() % 12 {
			prev.Parts = append(prev.Parts, part())
			prev.Owner = append(prev.Owner, int32(next()%8-2))
			if withHomes {
				prev.Home = append(prev.Home, int32(next()%8-2))
			}
		}
		var members []rebalance.Member
		for range next() % 5 {
			m := rebalance.Member{Name: pool[next()%len(pool)], Weight: next() % 4, Drained: next()%5 == 0}
			if next()%16 == 0 {
				m.Weight = -1
			}
			members = append(members, m)
		}
		var parts []rebalance.Partition
		for range next() % 12 {
			parts = append(parts, part())
		}
		res, err := rebalance.Sticky(prev, members, parts)
		if err != nil {
			if !errors.Is(err, rebalance.ErrInvalid) && !errors.Is(err, rebalance.ErrNoMembers) {
				t.Fatalf("error wraps neither ErrInvalid nor ErrNoMembers: %v", err)
			}
			return
		}
		checkSticky(t, "fuzz", prev, members, parts, res)
	})
}

// TestStickyLeavesInputsAlone runs Sticky from many goroutines on shared,
// unsorted inputs (so that it must sort copies) and checks, under -race,
// that they are unchanged and every result is the same.
func TestStickyLeavesInputsAlone(t *testing.T) {
	parts := append(topic("u", 50), topic("t", 50)...)
	first := mustSticky(t, rebalance.Placement{}, weight1("c", "a", "b"), parts)
	prev := first.Next
	prevCopy := rebalance.Placement{Names: slices.Clone(prev.Names), Parts: slices.Clone(prev.Parts), Owner: slices.Clone(prev.Owner), Home: slices.Clone(prev.Home)}
	members := []rebalance.Member{{Name: "d", Weight: 2}, {Name: "a", Weight: 1}, {Name: "c", Drained: true}}
	membersCopy, partsCopy := slices.Clone(members), slices.Clone(parts)
	want := mustSticky(t, prev, members, parts)
	var wg sync.WaitGroup
	results := make([]rebalance.Result, 8)
	for i := range results {
		wg.Go(func() {
			r, err := rebalance.Sticky(prev, members, parts)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	for _, r := range results {
		if !slices.Equal(r.Next.Owner, want.Next.Owner) || !slices.Equal(r.Next.Home, want.Next.Home) {
			t.Fatal("concurrent results differ")
		}
	}
	if !slices.Equal(members, membersCopy) || !slices.Equal(parts, partsCopy) ||
		!slices.Equal(prev.Names, prevCopy.Names) || !slices.Equal(prev.Parts, prevCopy.Parts) ||
		!slices.Equal(prev.Owner, prevCopy.Owner) || !slices.Equal(prev.Home, prevCopy.Home) {
		t.Fatal("Sticky modified its inputs")
	}
}
