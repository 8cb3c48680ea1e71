// Package actortest has helpers for tests that watch actors' outputs.
package actortest

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
)

// Await takes values from l into *last until ok(*last) holds and returns
// it; if that has not happened within the given time it fails tb, naming
// what it waited for and the last value seen. Call it from the test's
// goroutine.
func Await[T any](tb testing.TB, l *actor.Latest[T], last *T, within time.Duration, what string, ok func(T) bool) T {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for !ok(*last) {
		select {
		case <-l.Changed():
			if v, got := l.Take(); got {
				*last = v
			}
		case <-deadline.C:
			tb.Fatalf("no %s within %v; last %+v", what, within, *last)
		}
	}
	return *last
}

// AwaitChan is [Await] for an output channel; it also fails tb if the
// channel is closed first.
func AwaitChan[T any](tb testing.TB, ch <-chan T, last *T, within time.Duration, what string, ok func(T) bool) T {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for !ok(*last) {
		select {
		case v, open := <-ch:
			if !open {
				tb.Fatalf("closed while waiting for %s; last %+v", what, *last)
			}
			*last = v
		case <-deadline.C:
			tb.Fatalf("no %s within %v; last %+v", what, within, *last)
		}
	}
	return *last
}
