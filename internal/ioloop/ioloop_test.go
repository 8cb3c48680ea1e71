package ioloop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The loop attempts work only while Up and no retry is pending, and a new
// connection ends a pending retry; a state on the same connection does
// not.
func TestLoopAttemptsWhileUpAndResetsOnANewConnection(t *testing.T) {
	clock := actor.NewFakeClock(time.Unix(0, 0))
	in := actor.NewLatest[zksession.State]()
	loop := ioloop.New(ioloop.Config{Session: in, Clock: clock, What: "test"})
	defer loop.Stop()
	ctx := context.Background()
	calls := 0
	fail := func() error { calls++; return errors.New("boom") }
	take := func(st zksession.State) (fresh bool) {
		t.Helper()
		in.Set(st)
		fresh, ok := loop.Take()
		if !ok || loop.State() != st {
			t.Fatalf("Take: ok %v, state %+v; want %+v", ok, loop.State(), st)
		}
		return fresh
	}

	if _, ok := loop.Take(); ok {
		t.Fatal("Take with no state waiting: ok")
	}
	loop.Attempt(ctx, fail)
	if calls != 0 {
		t.Fatalf("work ran %d times before any session state", calls)
	}
	if !take(zksession.State{State: session.State{Status: session.Up, SessionID: 1, Reconnects: 1}}) {
		t.Error("the first Up is not a new connection")
	}
	loop.Attempt(ctx, fail)
	loop.Attempt(ctx, fail)
	if calls != 1 || clock.Timers() != 1 {
		t.Fatalf("after a failure: %d calls, %d timers; want 1 call and a retry scheduled", calls, clock.Timers())
	}
	if take(zksession.State{State: session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1}}) {
		t.Error("Suspended is a new connection")
	}
	if clock.Timers() != 1 {
		t.Error("the retry was cancelled without a new connection")
	}
	if !take(zksession.State{State: session.State{Status: session.Up, SessionID: 1, Reconnects: 2}}) {
		t.Error("Up again, resumed, is not a new connection")
	}
	if clock.Timers() != 0 {
		t.Error("the retry is still scheduled on the new connection")
	}
	loop.Attempt(ctx, fail)
	if calls != 2 {
		t.Errorf("%d calls, want the new connection's attempt at once", calls)
	}
	take(zksession.State{State: session.State{Status: session.Lost, SessionID: 1, Reconnects: 2}})
	clock.Advance(time.Minute)
	<-loop.C()
	loop.Fired()
	loop.Attempt(ctx, fail)
	if calls != 2 {
		t.Errorf("work ran while Lost")
	}
}

func TestLoopAttemptStops(t *testing.T) {
	in := actor.NewLatest[zksession.State]()
	fatal := errors.New("fatal")
	loop := ioloop.New(ioloop.Config{Session: in, What: "test", Fatal: func(err error) bool { return errors.Is(err, fatal) }})
	defer loop.Stop()
	in.Set(zksession.State{State: session.State{Status: session.Up, Reconnects: 1}})
	loop.Take()
	if stop, err := loop.Attempt(context.Background(), func() error { return fatal }); !stop || !errors.Is(err, fatal) {
		t.Errorf("fatal error: stop %v, err %v; want stop with it", stop, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if stop, err := loop.Attempt(ctx, func() error { return errors.New("closing") }); !stop || err != nil {
		t.Errorf("error after ctx is done: stop %v, err %v; want stop with nil", stop, err)
	}
}

// TestLoopStopsOnPermanentRefusals: NoAuth, InvalidACL and AuthFailed end
// the actor even without a Fatal of its own, with an error that names them
// in ZooKeeper's terms and still wraps them; other errors are retried.
func TestLoopStopsOnPermanentRefusals(t *testing.T) {
	for _, tt := range []struct {
		err  error
		name string
	}{{zk.ErrNoAuth, "NoAuth"}, {zk.ErrInvalidACL, "InvalidACL"}, {zk.ErrAuthFailed, "AuthFailed"}} {
		in := actor.NewLatest[zksession.State]()
		loop := ioloop.New(ioloop.Config{Session: in, What: "test"})
		in.Set(zksession.State{State: session.State{Status: session.Up, Reconnects: 1}})
		loop.Take()
		stop, err := loop.Attempt(context.Background(), func() error { return fmt.Errorf("create /a/b: %w", tt.err) })
		if !stop || !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), "/a/b") {
			t.Errorf("%v: stop %v, err %v; want stop with an error naming %s and the path", tt.err, stop, err, tt.name)
		}
		loop.Stop()
	}
	in := actor.NewLatest[zksession.State]()
	loop := ioloop.New(ioloop.Config{Session: in, What: "test"})
	defer loop.Stop()
	in.Set(zksession.State{State: session.State{Status: session.Up, Reconnects: 1}})
	loop.Take()
	if stop, err := loop.Attempt(context.Background(), func() error { return zk.ErrConnectionClosed }); stop || err != nil {
		t.Errorf("connection closed: stop %v, err %v; want a retry", stop, err)
	}
}
