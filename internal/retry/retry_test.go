package retry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAttempt(t *testing.T) {
	clock := actor.NewFakeClock(time.Unix(0, 0))
	p := retry.NewPacer(clock)
	defer p.Stop()
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	boom, fatal := errors.New("boom"), errors.New("fatal")
	isFatal := func(err error) bool { return errors.Is(err, fatal) }
	calls := 0
	fail := func(err error) func() error { return func() error { calls++; return err } }

	if stop, err := p.Attempt(ctx, log, "thing", fail(boom), isFatal); stop || err != nil {
		t.Fatalf("a failure: stop %v, err %v; want the actor to go on", stop, err)
	}
	if !strings.Contains(logged.String(), "zkalloc: thing failed; retrying") || p.Ready() {
		t.Fatalf("a failure: log %q, ready %v; want a warning and a pending retry", logged.String(), p.Ready())
	}
	if stop, _ := p.Attempt(ctx, log, "thing", fail(nil), isFatal); stop || calls != 1 {
		t.Fatalf("before the retry is due: stop %v, %d calls; want work not run", stop, calls)
	}
	clock.Advance(time.Minute)
	<-p.C()
	p.Fired()
	if stop, err := p.Attempt(ctx, log, "thing", fail(nil), isFatal); stop || err != nil || calls != 2 || !p.Ready() {
		t.Fatalf("the retry: stop %v, err %v, %d calls, ready %v", stop, err, calls, p.Ready())
	}
	if stop, err := p.Attempt(ctx, log, "thing", fail(fatal), isFatal); !stop || !errors.Is(err, fatal) {
		t.Fatalf("a fatal error: stop %v, err %v; want stop with it", stop, err)
	}
	cancel()
	logged.Reset()
	if stop, err := p.Attempt(ctx, log, "thing", fail(boom), nil); !stop || err != nil || logged.Len() != 0 {
		t.Fatalf("shutting down: stop %v, err %v, log %q; want a quiet stop", stop, err, logged.String())
	}
}

func TestResetCancelsTheScheduledAttempt(t *testing.T) {
	clock := actor.NewFakeClock(time.Unix(0, 0))
	p := retry.NewPacer(clock)
	defer p.Stop()
	for range 10 {
		p.Failed()
	}
	p.Reset()
	if !p.Ready() || clock.Timers() != 0 {
		t.Fatalf("after Reset: ready %v, %d timers; want ready and none", p.Ready(), clock.Timers())
	}
	if d := p.Failed(); d > 100*time.Millisecond {
		t.Errorf("the first delay after Reset is %v, want the initial one (about 50ms)", d)
	}
}

// A new pacer's first retry comes after its own first interval (50 ms,
// with backoff's randomization of ±50%), not backoff's 500 ms default.
func TestFirstRetryIsShort(t *testing.T) {
	p := retry.NewPacer(actor.NewFakeClock(time.Unix(0, 0)))
	defer p.Stop()
	if d := p.Failed(); d > 75*time.Millisecond {
		t.Errorf("first retry after %v, want at most 75 ms", d)
	}
}
