package history_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/rebalance"
)

// churn records a well-behaved group of nmembers sharing nparts for gens
// generations. In each, one member leaves or rejoins, and the hand-off
// goes in two phases: every member first receives and acks an Update that
// only revokes, then every live member receives and acks its new share.
// The clock ticks 1ms per event.
func churn(nparts, nmembers, gens int) (history.History, history.Options) {
	now := t0
	rec := history.NewRecorder(func() time.Time {
		now = now.Add(time.Millisecond)
		return now
	})
	ps := make([]rebalance.Partition, nparts)
	for i := range ps {
		ps[i] = rebalance.Partition{Topic: "t", ID: int32(i)}
	}
	names := make([]string, nmembers)
	for i := range names {
		names[i] = fmt.Sprint("m", i)
	}
	held := make(map[string][]rebalance.Partition) // newest Assigned of live members
	var live []string
	for g := 1; g <= gens; g++ {
		live = live[:0]
		for i, n := range names {
			if g == 1 || g%2 == 0 || i != g%nmembers {
				live = append(live, n)
			}
		}
		share := make(map[string][]rebalance.Partition)
		for i, p := range ps {
			share[live[i%len(live)]] = append(share[live[i%len(live)]], p)
		}
		for _, n := range names { // phase 1: revoke
			old, ok := held[n]
			if !ok {
				continue
			}
			keep := slices.DeleteFunc(slices.Clone(old), func(p rebalance.Partition) bool { return !slices.Contains(share[n], p) })
			lost := slices.DeleteFunc(slices.Clone(old), func(p rebalance.Partition) bool { return slices.Contains(keep, p) })
			if len(lost) > 0 {
				rec.Acked(n, rec.Received(n, int64(2*g), live, keep, lost))
				held[n] = keep
			}
			if !slices.Contains(live, n) {
				rec.Closed(n)
				delete(held, n)
			}
		}
		for _, n := range live { // phase 2: add
			rec.Acked(n, rec.Received(n, int64(2*g+1), live, share[n], nil))
			held[n] = share[n]
		}
	}
	return rec.History(), history.Options{Expected: ps, Live: live, Deadline: time.Minute}
}

func TestCheckChurn(t *testing.T) {
	t.Parallel()
	h, opts := churn(100, 5, 40)
	r := history.Check(h, opts)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.LongestGap.Duration() == 0 {
		t.Error("LongestGap = 0, want the hand-off gaps counted")
	}
	// Without its Acks from some point on, a member keeps holding what it
	// is told to revoke, while others take it over.
	i := slices.IndexFunc(h.Events, func(e history.Event) bool { return len(e.Revoked) > 0 && e.Time.After(ms(500)) })
	stubborn := h.Events[i].Member
	h.Events = slices.DeleteFunc(slices.Clone(h.Events), func(e history.Event) bool {
		return e.Kind == history.KindAcked && e.Member == stubborn && e.Time.After(ms(500))
	})
	if r := history.Check(h, opts); len(r.DoubleOwnerships) == 0 {
		t.Error("no double ownership after dropping an Ack")
	}
}

// BenchmarkCheck checks about 10^5 events over 10^3 partitions.
func BenchmarkCheck(b *testing.B) {
	h, opts := churn(1000, 10, 2500)
	for b.Loop() {
		if err := history.Check(h, opts).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(h.Events)), "events")
}
