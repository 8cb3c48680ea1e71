package zkalloc

import (
	"slices"
	"time"
)

// histogramBounds are the upper bounds of [Histogram]'s buckets: 100µs to
// 10s, about three to a decade. A strategy's run over a few members and
// partitions takes microseconds, one over 100,000 partitions tens of
// milliseconds; a run of seconds is a strategy that stalls.
var histogramBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// HistogramBounds returns the upper bounds of the buckets of every
// [Histogram], in increasing order: Histogram.Buckets[i] counts the
// durations at most HistogramBounds()[i]. They are fixed: 100µs, 250µs,
// 500µs, 1ms, 2.5ms, 5ms, ... 10s. It returns a new slice at each call.
func HistogramBounds() []time.Duration { return slices.Clone(histogramBounds[:]) }

// Histogram is a distribution of durations, cumulative as Prometheus's
// are: Buckets[i] counts the durations at most [HistogramBounds]()[i],
// Count all of them (the longer ones too) and Sum their total. Like the
// counters of [Stats], it counts from Start and never goes down, so the
// difference of two snapshots is the distribution between them. It is a
// value (an array, no slice): Stats stays comparable with ==.
type Histogram struct {
	Buckets [len(histogramBounds)]uint64
	Count   uint64
	Sum     time.Duration
}

// observe counts one duration d.
func (h *Histogram) observe(d time.Duration) {
	for i := len(histogramBounds) - 1; i >= 0 && d <= histogramBounds[i]; i-- {
		h.Buckets[i]++
	}
	h.Count++
	h.Sum += d
}
