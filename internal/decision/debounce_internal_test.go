package decision

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

func TestDebouncer(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name    string
		settle  time.Duration
		changes []int // ms
		want    int   // ms when due
	}{
		{"single change waits for quiet", time.Second, []int{0}, 1000},
		{"quiet restarts with each change", time.Second, []int{0, 500, 900}, 1900},
		{"churn is cut at five settles", time.Second, []int{0, 900, 1800, 2700, 3600, 4500}, 5000},
		{"zero settle is due at once", 0, []int{0, 10}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := debouncer{settle: tt.settle}
			if _, ok := d.due(); ok {
				t.Fatal("due before any change")
			}
			for _, ms := range tt.changes {
				d.change(at(ms))
			}
			got, ok := d.due()
			if !ok || !got.Equal(at(tt.want)) {
				t.Fatalf("due() = %v, %v; want %v", got.Sub(t0), ok, time.Duration(tt.want)*time.Millisecond)
			}
			if d.ready(got.Add(-time.Nanosecond)) || !d.ready(got) {
				t.Error("ready() disagrees with due()")
			}
			d.done()
			if _, ok := d.due(); ok {
				t.Error("due after done")
			}
		})
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	p := func(topic string, id int32) rebalance.Partition { return rebalance.Partition{Topic: topic, ID: id} }
	prev := []rebalance.Partition{p("a", 1), p("a", 2), p("b", 10)}
	next := []rebalance.Partition{p("a", 2), p("a", 10), p("c", 0)}
	added, removed := diff(prev, next)
	if want := []rebalance.Partition{p("a", 10), p("c", 0)}; !equal(added, want) {
		t.Errorf("added = %v, want %v", added, want)
	}
	if want := []rebalance.Partition{p("a", 1), p("b", 10)}; !equal(removed, want) {
		t.Errorf("removed = %v, want %v", removed, want)
	}
	if a, r := diff(nil, nil); a != nil || r != nil {
		t.Errorf("diff(nil, nil) = %v, %v", a, r)
	}
}

func equal(a, b []rebalance.Partition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
