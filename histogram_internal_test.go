package zkalloc

import (
	"slices"
	"testing"
	"time"
)

// Histogram's buckets are cumulative, their bounds inclusive, and a
// duration past the last bound is counted in Count and Sum only.
func TestHistogramObserve(t *testing.T) {
	t.Parallel()
	var h Histogram
	for _, d := range []time.Duration{0, 100 * time.Microsecond, 101 * time.Microsecond, time.Second, time.Minute} {
		h.observe(d)
	}
	bounds := HistogramBounds()
	want := map[time.Duration]uint64{100 * time.Microsecond: 2, 250 * time.Microsecond: 3, 500 * time.Millisecond: 3, time.Second: 4, 10 * time.Second: 4}
	for i, b := range bounds {
		if w, ok := want[b]; ok && h.Buckets[i] != w {
			t.Errorf("bucket le=%v = %d, want %d", b, h.Buckets[i], w)
		}
		if i > 0 && h.Buckets[i] < h.Buckets[i-1] {
			t.Errorf("bucket le=%v = %d, below the one before (%d): not cumulative", b, h.Buckets[i], h.Buckets[i-1])
		}
	}
	if sum := 0 + 100*time.Microsecond + 101*time.Microsecond + time.Second + time.Minute; h.Count != 5 || h.Sum != sum {
		t.Errorf("count %d, sum %v; want 5, %v", h.Count, h.Sum, sum)
	}
	if bounds[0] != 100*time.Microsecond || bounds[len(bounds)-1] != 10*time.Second || !slices.IsSorted(bounds) {
		t.Errorf("bounds %v, want increasing from 100µs to 10s", bounds)
	}
	bounds[0] = time.Hour
	if HistogramBounds()[0] != 100*time.Microsecond {
		t.Error("HistogramBounds returns the package's own array: a caller changed it")
	}
}
