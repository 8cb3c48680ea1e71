package history_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestRecorderConcurrent has several consumers record at once, each
// owning its own partition and cycling through updates, acks and restarts.
func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	const members, rounds = 8, 200
	// The fake clock ticks on every reading; the Recorder reads it under
	// its lock, so it needs none of its own (the race detector checks).
	now := t0
	rec := history.NewRecorder(func() time.Time {
		now = now.Add(time.Microsecond)
		return now
	})
	var names []string
	var expected []rebalance.Partition
	for i := range members {
		names = append(names, fmt.Sprint("m", i))
		expected = append(expected, rebalance.Partition{Topic: "t", ID: int32(i)})
	}

	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() {
			mine := []rebalance.Partition{expected[i]}
			for j := range rounds {
				seq := rec.Received(names[i], 1, names, mine, nil)
				rec.Acked(names[i], seq)
				if j%50 == 49 && j != rounds-1 {
					rec.Closed(names[i])
				}
			}
		})
	}
	wg.Go(func() { rec.Fault("none", t0, t0) })
	wg.Wait()

	h := rec.History()
	if want := members*rounds*2 + members*(rounds/50-1); len(h.Events) != want {
		t.Errorf("%d events, want %d", len(h.Events), want)
	}
	if !slices.IsSortedFunc(h.Events, func(a, b history.Event) int { return a.Time.Compare(b.Time) }) {
		t.Error("History().Events not sorted by time")
	}
	seen := make(map[int]bool)
	for _, e := range h.Events {
		if e.Kind == history.KindReceived {
			if seen[e.Seq] {
				t.Errorf("seq %d returned twice", e.Seq)
			}
			seen[e.Seq] = true
		}
	}
	r := history.Check(h, history.Options{Expected: expected, Live: names})
	if err := r.Err(); err != nil {
		t.Error(err)
	}
}

func TestRecorderCopiesAndSorts(t *testing.T) {
	t.Parallel()
	times := []time.Time{ms(20), ms(10), ms(10)}
	rec := history.NewRecorder(func() time.Time {
		t := times[0]
		times = times[1:]
		return t
	})
	assigned := parts(t, "t:0")
	members := []string{"a"}
	seq := rec.Received("a", 1, members, assigned, nil)
	assigned[0].ID, members[0] = 9, "z"
	rec.Closed("a")
	rec.Acked("a", seq)
	rec.Fault("late", ms(50), ms(60))
	rec.Fault("early", ms(5), ms(6))

	h := rec.History()
	var kinds []history.EventKind
	for _, e := range h.Events {
		kinds = append(kinds, e.Kind)
	}
	if want := []history.EventKind{history.KindClosed, history.KindAcked, history.KindReceived}; !slices.Equal(kinds, want) {
		t.Errorf("kinds = %v, want %v (by time, ties in recording order)", kinds, want)
	}
	if e := h.Events[2]; e.Assigned[0].ID != 0 || e.Members[0] != "a" || e.Seq != seq {
		t.Errorf("received event = %+v, want the caller's slices copied", e)
	}
	if h.Faults[0].Kind != "early" {
		t.Errorf("faults = %+v, want them by start", h.Faults)
	}
}

func TestRecorderExpect(t *testing.T) {
	t.Parallel()
	s := newScript(t)
	set := parts(t, "t:0 t:1")
	s.now = ms(7)
	s.rec.Expect(set)
	set[0].ID = 9
	h := s.rec.History()
	if len(h.Events) != 1 {
		t.Fatalf("%d events, want 1", len(h.Events))
	}
	e := h.Events[0]
	if want := parts(t, "t:0 t:1"); e.Kind != history.KindExpected || !e.Time.Equal(ms(7)) || e.Member != "" || !slices.Equal(e.Expected, want) {
		t.Errorf("event = %+v, want KindExpected at 7ms with a copy of the set", e)
	}
}

func TestRecorderZeroValue(t *testing.T) {
	t.Parallel()
	var rec history.Recorder
	before := time.Now()
	rec.Closed("a")
	if e := rec.History().Events[0]; e.Time.Before(before) {
		t.Errorf("stamp %v before %v: want time.Now", e.Time, before)
	}
}
