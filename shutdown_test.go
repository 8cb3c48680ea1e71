package zkalloc_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
)

// Shutdown(ctx): bounded by ctx, releasing at once when it ends; Close
// as Shutdown bounded by ReleaseTimeout; both return the same, again.

// longRelease is a ReleaseTimeout no test waits for: a test that ends
// within it did not wait for it.
const longRelease = time.Minute

// stubborn is an allocator whose consumer acks every Update but the
// final one, which revokes everything for the shutdown (or acks that too
// with ackFinal).
type stubborn struct {
	alloc *zkalloc.Allocator

	mu    sync.Mutex
	final zkalloc.Update // the final Update, once received
	got   chan struct{}  // closed when it is
	done  chan struct{}  // closed when Updates is
}

func (c *cluster) startStubborn(cfg zkalloc.Config, ackFinal bool) *stubborn {
	c.t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	s := &stubborn{alloc: alloc, got: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for u := range alloc.Updates() {
			if u.Cause == zkalloc.RevokeShutdown {
				s.mu.Lock()
				if s.final.Reason == "" {
					s.final = u
					close(s.got)
				}
				s.mu.Unlock()
				if !ackFinal {
					continue
				}
			}
			u.Ack()
		}
	}()
	c.t.Cleanup(func() { alloc.Close(); <-s.done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// waitFinal waits until the consumer has received the final Update.
func (s *stubborn) waitFinal(t *testing.T) zkalloc.Update {
	t.Helper()
	select {
	case <-s.got:
	case <-time.After(testTimeout):
		t.Fatal("the consumer did not receive a final Update revoking everything for the shutdown")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}

// shutdownGroup starts a, whose consumer acks as ackFinal says, with a
// long ReleaseTimeout and the longest session timeout the test server
// grants, and b, and waits until they share t:0..3.
func shutdownGroup(t *testing.T, ackFinal bool) (*cluster, *stubborn, *member) {
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(4)}
	b := c.start(c.config("b", seed))
	cfg := c.config("a", seed)
	cfg.ReleaseTimeout = longRelease
	cfg.SessionTimeout = 10 * time.Second // the most the test server grants
	a := c.startStubborn(cfg, ackFinal)
	waitFor(t, testTimeout, func() string {
		if u, _ := b.snapshot(); len(u.Assigned) != 2 || len(u.Pending) != 0 || len(a.alloc.Current().Assigned) != 2 {
			return "a and b do not share the partitions yet"
		}
		return ""
	})
	return c, a, b
}

// waitOwnsAll waits until b lists all 4 partitions, and returns how long
// that took from began.
func waitOwnsAll(t *testing.T, b *member, began time.Time, within time.Duration) time.Duration {
	t.Helper()
	waitFor(t, within, func() string {
		if u, _ := b.snapshot(); len(u.Assigned) != 4 {
			return "b does not own all 4 partitions"
		}
		return ""
	})
	return time.Since(began)
}

// Shutdown with a context that has already ended returns at once, having
// closed the session, so the other member takes the partitions without
// waiting for the ack, the session timeout or ReleaseTimeout. Close
// afterwards returns the same. Before, there was no Shutdown: Close on a
// consumer that never acked waited twice ReleaseTimeout.
func TestShutdownExpiredContextReleasesAtOnce(t *testing.T) {
	t.Parallel()
	_, a, b := shutdownGroup(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	err := a.alloc.Shutdown(ctx)
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown(expired ctx) = %v, want ctx's error", err)
	}
	// Generous for a loaded machine; it waits for nothing but the
	// actors' own return.
	if took > 5*time.Second {
		t.Errorf("Shutdown(expired ctx) took %v", took)
	}
	select {
	case u, ok := <-a.alloc.Updates():
		if ok {
			t.Errorf("Updates delivered %+v after Shutdown returned", u)
		}
	default:
		t.Error("Updates not closed when Shutdown returned")
	}
	// Within the session timeout a granted (10 s at most): the server
	// deleted the claims when the session closed.
	within := waitOwnsAll(t, b, began, 9*time.Second)
	t.Logf("Shutdown took %v; b owned everything %v after it began", took.Round(time.Millisecond), within.Round(time.Millisecond))
	if err2 := a.alloc.Close(); err2 != err {
		t.Errorf("Close after Shutdown = %v, want the same %v", err2, err)
	}
	if err2 := a.alloc.Shutdown(context.Background()); err2 != err {
		t.Errorf("Shutdown again = %v, want the same %v", err2, err)
	}
}

// A consumer that acks the final Update lets Shutdown return nil, the
// partitions handed over only after the ack; the final Update says it
// revokes for a shutdown.
func TestShutdownAckedReturnsNil(t *testing.T) {
	t.Parallel()
	_, a, b := shutdownGroup(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.alloc.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with the consumer acking = %v, want nil", err)
	}
	final := a.waitFinal(t)
	if len(final.Assigned) != 0 || len(final.Revoked) != 2 || final.Cause != zkalloc.RevokeShutdown {
		t.Errorf("final Update %+v, want its 2 partitions revoked for a shutdown", final)
	}
	waitOwnsAll(t, b, time.Now(), testTimeout)
	if err := a.alloc.Close(); err != nil {
		t.Errorf("Close after Shutdown = %v, want nil", err)
	}
}

// A consumer that never acks makes Shutdown give up when ctx ends: it
// returns ctx's error then, not before and not ReleaseTimeout later.
func TestShutdownWithoutAckReturnsAtDeadline(t *testing.T) {
	t.Parallel()
	_, a, b := shutdownGroup(t, false)
	const wait = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	began := time.Now()
	err := a.alloc.Shutdown(ctx)
	took := time.Since(began)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want ctx's error", err)
	}
	if took < wait || took > wait+5*time.Second {
		t.Errorf("Shutdown returned after %v, want soon after ctx's %v", took, wait)
	}
	a.waitFinal(t)
	waitOwnsAll(t, b, began, 9*time.Second) // the claims went with the session
	if err2 := a.alloc.Close(); err2 != err {
		t.Errorf("Close after Shutdown = %v, want the same %v", err2, err)
	}
}

// Close is Shutdown bounded by ReleaseTimeout from its call. Here the
// consumer has stopped reading Updates (the issue's "defer Close after
// the loop exited"): Close returns an error wrapping
// context.DeadlineExceeded after ReleaseTimeout. Before, it waited twice
// ReleaseTimeout for the undelivered final Update, and returned nil.
func TestCloseWaitsReleaseTimeoutAtMost(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	cfg := c.config("a", map[string][]int32{"t": ids(2)})
	const rt = 3 * time.Second
	cfg.ReleaseTimeout = rt
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alloc.Close() })
	for u := range alloc.Updates() { // read until it has both, then stop reading
		u.Ack()
		if len(u.Assigned) == 2 {
			break
		}
	}
	began := time.Now()
	err = alloc.Close()
	took := time.Since(began)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a consumer that stopped reading = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if took < rt || took >= 2*rt {
		t.Errorf("Close returned after %v, want ReleaseTimeout (%v), well before twice that", took, rt)
	}
	if err2 := alloc.Close(); err2 != err {
		t.Errorf("second Close = %v, want the same %v", err2, err)
	}
}

// Shutdown before Start leaves the allocator closed at once, and calls
// made together all return the same.
func TestShutdownBeforeStartAndConcurrently(t *testing.T) {
	t.Parallel()
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "m", ReleaseTimeout: longRelease})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := make(chan error, 3)
	go func() { errs <- a.Shutdown(ctx) }()
	go func() { errs <- a.Shutdown(context.Background()) }()
	go func() { errs <- a.Close() }()
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Shutdown or Close before Start = %v, want nil: nothing to hand over", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("Shutdown before Start did not return")
		}
	}
	if _, ok := <-a.Updates(); ok {
		t.Fatal("Updates delivered after Shutdown")
	}
	if err := a.Start(context.Background()); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("Start after Shutdown = %v, want ErrClosed", err)
	}
}

// Two Shutdowns at once: the first ctx to end stops the wait for both,
// and both return its error.
func TestShutdownConcurrentFirstDeadlineWins(t *testing.T) {
	t.Parallel()
	_, a, _ := shutdownGroup(t, false)
	long, cancelLong := context.WithTimeout(context.Background(), testTimeout)
	defer cancelLong()
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	errs := make(chan error, 2)
	began := time.Now()
	go func() { errs <- a.alloc.Shutdown(long) }()
	go func() { errs <- a.alloc.Shutdown(short) }()
	var got []error
	for range 2 {
		got = append(got, <-errs)
	}
	if time.Since(began) > 10*time.Second {
		t.Errorf("Shutdowns returned after %v, want soon after the shorter ctx's 500ms", time.Since(began))
	}
	if !errors.Is(got[0], context.DeadlineExceeded) || got[0] != got[1] {
		t.Errorf("Shutdowns returned %v and %v, want both the shorter ctx's error", got[0], got[1])
	}
}
