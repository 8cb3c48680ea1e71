package rebalance_test

import (
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// share returns n partitions of topic t starting at ID from.
func share(t string, from, n int32) []rebalance.Partition {
	out := make([]rebalance.Partition, n)
	for i := range out {
		out[i] = rebalance.Partition{Topic: t, ID: from + int32(i)}
	}
	return out
}

func TestMinMoves(t *testing.T) {
	t.Parallel()
	balanced := map[string][]rebalance.Partition{ // 7 partitions: 3, 2, 2
		"a": share("t", 0, 3), "b": share("t", 3, 2), "c": share("t", 5, 2),
	}
	tests := []struct {
		name    string
		prev    map[string][]rebalance.Partition
		members []string
		want    int
	}{
		{"no change", balanced, []string{"a", "b", "c"}, 0},
		{"a 2-holder leaves", balanced, []string{"a", "c"}, 2},
		{"the 3-holder leaves", balanced, []string{"b", "c"}, 3},
		{"one joins", balanced, []string{"a", "b", "c", "d"}, 1}, // shares 2,2,2,1: d takes a's extra
		{"two join", balanced, []string{"a", "b", "c", "d", "e"}, 2},
		{"all replaced", balanced, []string{"x", "y"}, 7},
		{"uneven: relevel needed", map[string][]rebalance.Partition{"a": share("t", 0, 6), "b": nil}, []string{"a", "b"}, 3},
		{"no partitions", map[string][]rebalance.Partition{"a": nil}, []string{"a", "b"}, 0},
		{"no members", balanced, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := rebalance.MinMoves(tt.prev, tt.members); got != tt.want {
				t.Errorf("MinMoves = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMoved(t *testing.T) {
	t.Parallel()
	prev := map[string][]rebalance.Partition{"a": share("t", 0, 3), "b": share("t", 3, 2)}
	next := map[string][]rebalance.Partition{"a": share("t", 0, 2), "b": share("t", 2, 3), "c": share("u", 0, 1)}
	if got, want := rebalance.Moved(prev, next), 2; got != want { // t:2 to b, and the new u:0
		t.Errorf("Moved = %d, want %d", got, want)
	}
	if got := rebalance.Moved(prev, prev); got != 0 {
		t.Errorf("Moved(prev, prev) = %d, want 0", got)
	}
}
