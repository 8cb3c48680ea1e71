// Package actortest has helpers for tests that watch actors' outputs.
package actortest

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/zksession"
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

// SessionConfig returns cfg with the fields a test leaves out filled in,
// as the allocator would fill them: a Timeout of 10 s, net.DialTimeout,
// a Logger that discards, the real clock. The session actor has no
// defaults of its own.
func SessionConfig(cfg zksession.Config) zksession.Config {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Dialer == nil {
		cfg.Dialer = net.DialTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	return cfg
}

// Observe runs a plain session to servers for a test's own reads and
// writes and returns its state once it is up, failing tb if it is not
// within the given time. The session stops when the test ends. Call it
// from the test's goroutine.
func Observe(tb testing.TB, servers []string, within time.Duration) zksession.State {
	tb.Helper()
	sess := zksession.New(SessionConfig(zksession.Config{Servers: servers}))
	probe := sess.Subscribe()
	Run(tb, "observer", sess.Run)
	var st zksession.State
	return Await(tb, probe, &st, within, "observer session up", func(st zksession.State) bool { return st.Status == session.Up })
}

// IsUp reports whether st is an Up session, for [Await] and the like.
func IsUp(st zksession.State) bool { return st.Status == session.Up }

// Run runs run (an actor's or a group's Run) on a goroutine of its own
// until stop is called or the test ends, whichever is first: stop cancels
// its context, waits for it to return and fails tb, naming what, if it
// returned an error. Later calls of stop do nothing.
func Run(tb testing.TB, what string, run func(context.Context) error) (stop func()) {
	return Go(tb, what, run).Stop
}

// Running is a Run started by [Go].
type Running struct {
	tb      testing.TB
	what    string
	cancel  context.CancelFunc
	done    chan struct{}
	err     error // set before done is closed
	once    sync.Once
	mayFail atomic.Bool
}

// Go runs run on a goroutine of its own until [Running.Stop] is called or
// the test ends, whichever is first. Unless [Running.MayFail] was called,
// an error it returns fails tb, naming what, when it is stopped.
func Go(tb testing.TB, what string, run func(context.Context) error) *Running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{tb: tb, what: what, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = run(ctx)
		close(r.done)
	}()
	tb.Cleanup(r.Stop)
	return r
}

// Done is closed when run has returned.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err is what run returned; call it after Done is closed.
func (r *Running) Err() error { return r.err }

// MayFail tells Stop not to report an error: the test expects one and
// checks it itself.
func (r *Running) MayFail() { r.mayFail.Store(true) }

// Stop cancels run's context and waits for it to return, failing tb if it
// returned an error (see [Running.MayFail]). Later calls do nothing.
func (r *Running) Stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		if r.err != nil && !r.mayFail.Load() {
			r.tb.Errorf("%s: Run: %v", r.what, r.err)
		}
	})
}

// StartWithSession runs a session with cfg (filled by [SessionConfig])
// and, in one [actor.Group] with it, the actor that newActor builds on a
// subscription to that session, as [Go] does. It returns the running group and another subscription,
// for the test to follow the session.
func StartWithSession(tb testing.TB, cfg zksession.Config, what string, newActor func(*actor.Latest[zksession.State]) actor.Actor) (*Running, *actor.Latest[zksession.State]) {
	tb.Helper()
	sess := zksession.New(SessionConfig(cfg))
	probe := sess.Subscribe()
	a := newActor(sess.Subscribe())
	var g actor.Group
	g.Add("session", sess)
	g.Add(what, a)
	return Go(tb, what, g.Run), probe
}
