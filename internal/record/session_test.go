package record_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/session"
)

// TestWaitsForSession: Assign sends nothing until the session is up,
// returns ctx's error if ctx ends first, and goes on once it is up.
func TestWaitsForSession(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	sess := zksession.New(actortest.SessionConfig(zksession.Config{Servers: []string{record.Server(t)}}))
	probe := sess.Subscribe()
	actortest.Run(t, "session", sess.Run)
	var up zksession.State
	actortest.Await(t, probe, &up, within, "session up", actortest.IsUp)

	cell := actor.NewLatest[zksession.State]()
	cell.Set(zksession.State{State: session.State{Status: session.Connecting}}) // no Conn: a request would panic
	r := record.New(record.Config{Paths: paths, Member: "a", Session: cell})
	job := jobOf(1, 1, []string{"a"}, partsOf(1, 5))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := r.Assign(ctx, job)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Assign with the session connecting: %v, want to wait until ctx ends", err)
	}

	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		parts, err := r.Assign(ctx, job)
		done <- result{parts: parts, err: err}
	}()
	cell.Set(up)
	res := <-done
	if res.err != nil || !slices.Equal(res.parts, job.Partitions) {
		t.Errorf("Assign once the session is up: %v, %v; want every partition", res.parts, res.err)
	}
}

// TestRetries: failed requests are retried until they succeed, and
// logged at WARN once for their kind.
func TestRetries(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	var fail atomic.Bool
	var attempts atomic.Int64
	fail.Store(true)
	sess := zksession.New(actortest.SessionConfig(zksession.Config{
		Servers: []string{record.Server(t)},
		WrapConn: func(c zksession.Conn) zksession.Conn {
			return countingConn{actortest.FailingConn{Conn: c, Fail: &fail}, &attempts, nil}
		},
	}))
	sub, probe := sess.Subscribe(), sess.Subscribe()
	actortest.Run(t, "session", sess.Run)
	var up zksession.State
	actortest.Await(t, probe, &up, within, "session up", actortest.IsUp)
	logs := actortest.NewLogs()
	r := record.New(record.Config{Paths: paths, Member: "a", Session: sub, Logger: slog.New(logs)})
	job := jobOf(1, 1, []string{"a"}, partsOf(1, 5))

	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		parts, err := r.Assign(ctx, job)
		done <- result{parts: parts, err: err}
	}()
	if rec := logs.Next(t, within); rec.Level != slog.LevelWarn {
		t.Errorf("first log: %+v, want a warning", rec)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for attempts.Load() < 4 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d attempts within %v, want 4", attempts.Load(), within)
		}
	}
	fail.Store(false)
	res := <-done
	if res.err != nil || !slices.Equal(res.parts, job.Partitions) {
		t.Errorf("Assign after the failures: %v, %v; want every partition", res.parts, res.err)
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d warnings after %d failed attempts, want 1", n, attempts.Load())
	}
}
