// Package actortest has helpers for tests that watch actors' outputs.
package actortest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/session"
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

// Observe runs a plain session to servers for a test's own reads and
// writes and returns its state once it is up, failing tb if it is not
// within the given time. The session stops when the test ends. Call it
// from the test's goroutine.
func Observe(tb testing.TB, servers []string, within time.Duration) session.State {
	tb.Helper()
	sess := session.New(session.Config{Servers: servers, Timeout: 10 * time.Second})
	probe := sess.Subscribe()
	Run(tb, "observer", sess.Run)
	var st session.State
	return Await(tb, probe, &st, within, "observer session up", func(st session.State) bool { return st.Status == session.Up })
}

// Run runs run (an actor's or a group's Run) on a goroutine of its own
// until stop is called or the test ends, whichever is first: stop cancels
// its context, waits for it to return and fails tb, naming what, if it
// returned an error. Later calls of stop do nothing.
func Run(tb testing.TB, what string, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("%s: Run: %v", what, err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
