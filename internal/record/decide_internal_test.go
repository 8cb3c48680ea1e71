package record

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	const step = 20 * time.Millisecond
	live := []string{"a", "b", "c"}
	job := decision.Job{Members: live, Live: live, MembersZxid: 10, PartitionsZxid: 20}
	head := func(mz, pz int64) *assignment.Head {
		return &assignment.Head{Generation: 3, MembersZxid: mz, PartitionsZxid: pz}
	}
	tests := []struct {
		name string
		head *assignment.Head
		want action
	}{
		{"equal", head(10, 20), match},
		{"absent", nil, compute},
		{"older in both", head(9, 19), compute},
		{"older members, same partitions", head(9, 20), compute},
		{"same members, older partitions", head(10, 19), compute},
		{"newer in both", head(11, 21), wait},
		{"newer members, same partitions", head(11, 20), wait},
		{"same members, newer partitions", head(10, 21), wait},
		{"mixed: newer members, older partitions", head(11, 19), wait},
		{"mixed: older members, newer partitions", head(9, 21), wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, me := range live {
				for _, warm := range []bool{false, true} {
					got := decide(tt.head, job, me, step, warm)
					if got.act != tt.want {
						t.Fatalf("decide(%s) for %s, warm %v = %v, want %v", tt.name, me, warm, got.act, tt.want)
					}
					if tt.want != compute {
						if got.delay != 0 {
							t.Errorf("decide(%s) for %s: delay %v, want 0", tt.name, me, got.delay)
						}
						continue
					}
					// The member that holds the head decoded computes at
					// once; the others by rank, after it if there is a
					// head (nobody is warm over none).
					r := rank(live, me, job.MembersZxid, job.PartitionsZxid)
					want := plan{act: compute, rank: r, delay: time.Duration(r+1) * step}
					switch {
					case tt.head == nil:
						want.delay = time.Duration(r) * step
					case warm:
						want = plan{act: compute, warm: true}
					}
					if got != want {
						t.Errorf("decide(%s) for %s, warm %v = %+v, want %+v", tt.name, me, warm, got, want)
					}
				}
			}
		})
	}
}

// TestRanks checks that the ranks of a job's live members are a
// permutation, the same whatever the order of the list, that a member
// not live ranks last, and that the first to compute changes with the
// views.
func TestRanks(t *testing.T) {
	t.Parallel()
	live := make([]string, 50)
	for i := range live {
		live[i] = fmt.Sprintf("member-%02d", i)
	}
	reversed := slices.Clone(live)
	slices.Reverse(reversed)
	seen := make([]bool, len(live))
	for _, me := range live {
		r := rank(live, me, 7, 8)
		if r < 0 || r >= len(live) || seen[r] {
			t.Fatalf("rank of %s = %d: out of range or taken", me, r)
		}
		seen[r] = true
		if r2 := rank(reversed, me, 7, 8); r2 != r {
			t.Errorf("rank of %s depends on the order of live: %d and %d", me, r, r2)
		}
	}
	if r := rank(live, "gone", 7, 8); r != len(live) {
		t.Errorf("rank of a member not live = %d, want %d", r, len(live))
	}
	firsts := make(map[string]bool)
	for z := int64(1); z <= 20; z++ {
		for _, me := range live {
			if rank(live, me, z, 8) == 0 {
				firsts[me] = true
			}
		}
	}
	if len(firsts) < 5 {
		t.Errorf("over 20 member views, only %d distinct members compute first: %v", len(firsts), firsts)
	}
	if d := decide(nil, decision.Job{Live: []string{"only"}}, "only", time.Second, false); d.act != compute || d.delay != 0 {
		t.Errorf("a lone member: %+v, want compute at once", d)
	}
}

// TestStickyMembers: a live member's weight is the job's; a seat's
// (a member away within DepartureDelay) is the one the previous record
// gave it, else 1; drained as the job says.
// The runner gives the job the previous head's weights for the seats
// it does not weigh (decision.Job.StickyMembers has the rule's tests).
func TestHeadWeight(t *testing.T) {
	t.Parallel()
	job := decision.Job{
		Members: []string{"a", "b", "s", "t"},
		Live:    []string{"a", "b"},
		Weights: []int{2, 3},
		Drained: []string{"b", "t"},
	}
	head := &assignment.Head{Members: []assignment.Entry{
		{Member: rebalance.Member{Name: "a", Weight: 7}},
		{Member: rebalance.Member{Name: "s", Weight: 4}},
	}}
	tests := []struct {
		name string
		head *assignment.Head
		want []rebalance.Member
	}{
		{"with a head", head, []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 3, Drained: true}, {Name: "s", Weight: 4}, {Name: "t", Weight: 1, Drained: true}}},
		{"no head", nil, []rebalance.Member{{Name: "a", Weight: 2}, {Name: "b", Weight: 3, Drained: true}, {Name: "s", Weight: 1}, {Name: "t", Weight: 1, Drained: true}}},
	}
	for _, tt := range tests {
		if got := job.StickyMembers(headWeight(tt.head)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: StickyMembers = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
