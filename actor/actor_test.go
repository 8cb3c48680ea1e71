package actor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/actor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor returns a context that ends the test's wait after a generous
// deadline, so a broken actor fails the test instead of hanging it.
func waitFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGroupFirstReturnCancelsTheRest(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var stopped atomic.Int32
	var g actor.Group
	for range 3 {
		g.Add("waiter", actor.Func(func(ctx context.Context) error {
			<-ctx.Done()
			stopped.Add(1)
			return ctx.Err()
		}))
	}
	g.Add("failer", actor.Func(func(context.Context) error { return boom }))

	err := g.Run(waitFor(t))
	if !errors.Is(err, boom) {
		t.Fatalf("Run() = %v, want %v", err, boom)
	}
	if !strings.Contains(err.Error(), "failer") {
		t.Errorf("Run() = %q, want the failing actor's name in it", err)
	}
	if got := stopped.Load(); got != 3 {
		t.Errorf("%d waiters had returned when Run returned, want 3", got)
	}
}

func TestGroupCancelledByParentReturnsNil(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var g actor.Group
	started := make(chan struct{})
	g.Add("a", actor.Func(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}))
	g.Add("b", actor.Func(func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run() = %v after parent cancel, want nil", err)
		}
	case <-waitFor(t).Done():
		t.Fatal("Run did not return after cancel")
	}
}

func TestGroupRecoversPanic(t *testing.T) {
	t.Parallel()
	var g actor.Group
	g.Add("panicky", actor.Func(func(context.Context) error { panic("oops") }))
	g.Add("calm", actor.Func(func(ctx context.Context) error { <-ctx.Done(); return nil }))
	err := g.Run(waitFor(t))
	if err == nil || !strings.Contains(err.Error(), "oops") || !strings.Contains(err.Error(), "panicky") {
		t.Fatalf("Run() = %v, want the panic reported with the actor's name", err)
	}
}

func TestGroupEmpty(t *testing.T) {
	t.Parallel()
	var g actor.Group
	if err := g.Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	inbox := make(chan int)
	done := make(chan struct{})

	got := make(chan int, 1)
	go func() { got <- <-inbox }()
	if err := actor.Send(waitFor(t), done, inbox, 7); err != nil {
		t.Fatalf("Send() = %v", err)
	}
	if v := <-got; v != 7 {
		t.Fatalf("received %d, want 7", v)
	}

	close(done)
	if err := actor.Send(waitFor(t), done, inbox, 8); !errors.Is(err, actor.ErrClosed) {
		t.Fatalf("Send() after done = %v, want ErrClosed", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := actor.Send(ctx, make(chan struct{}), inbox, 9); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send() with cancelled ctx = %v, want context.Canceled", err)
	}
}

type double struct {
	n     int
	reply chan<- int
}

func TestCall(t *testing.T) {
	t.Parallel()
	inbox := make(chan double)
	done := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		req := <-inbox
		req.reply <- 2 * req.n
	}()
	got, err := actor.Call(waitFor(t), done, inbox, func(r chan<- int) double { return double{n: 21, reply: r} })
	if err != nil || got != 42 {
		t.Fatalf("Call() = %d, %v; want 42, nil", got, err)
	}
	<-served

	// A receiver that takes the request and stops without answering.
	go func() {
		<-inbox
		close(done)
	}()
	_, err = actor.Call(waitFor(t), done, inbox, func(r chan<- int) double { return double{n: 1, reply: r} })
	if !errors.Is(err, actor.ErrClosed) {
		t.Fatalf("Call() to a stopped receiver = %v, want ErrClosed", err)
	}
}

func TestOutboxLatestWins(t *testing.T) {
	t.Parallel()
	o := actor.NewOutbox[int]()
	if o.Send() != nil || o.Has() {
		t.Fatal("an empty outbox offers a send case")
	}
	o.Put(1)
	o.Put(2)
	o.Put(3)
	if !o.Has() || o.Pending() != 3 {
		t.Fatalf("Pending() = %d, want the newest value 3", o.Pending())
	}

	got := make(chan int, 1)
	go func() { got <- <-o.C() }()
	o.Send() <- o.Pending()
	o.Sent()
	if v := <-got; v != 3 {
		t.Fatalf("reader got %d, want 3", v)
	}
	if o.Send() != nil {
		t.Fatal("outbox still offers a send case after Sent")
	}

	o.Put(4)
	o.Close()
	if _, ok := <-o.C(); ok {
		t.Fatal("C() not closed after Close")
	}
}

func TestFakeClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := actor.NewFakeClock(start)
	a := c.NewTimer(2 * time.Second)
	b := c.NewTimer(time.Second)
	if err := c.WaitTimers(waitFor(t), 2); err != nil {
		t.Fatal(err)
	}

	c.Advance(999 * time.Millisecond)
	select {
	case <-b.C():
		t.Fatal("timer fired early")
	default:
	}
	c.Advance(time.Millisecond)
	if at := <-b.C(); !at.Equal(start.Add(time.Second)) {
		t.Fatalf("timer fired at %v, want %v", at, start.Add(time.Second))
	}

	if !a.Stop() {
		t.Fatal("Stop() on an active timer = false")
	}
	c.Advance(time.Hour)
	select {
	case <-a.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if a.Stop() {
		t.Fatal("Stop() on a stopped timer = true")
	}

	// Reset discards a value that fired but was not received.
	a.Reset(time.Second)
	c.Advance(time.Second)
	a.Reset(time.Second)
	select {
	case <-a.C():
		t.Fatal("Reset left a stale value in C")
	default:
	}
	c.Advance(time.Second)
	<-a.C()
	if got := c.Timers(); got != 0 {
		t.Fatalf("Timers() = %d after all fired, want 0", got)
	}
	if got, want := c.Now(), start.Add(time.Hour+3*time.Second); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	c := actor.RealClock()
	before := time.Now()
	tm := c.NewTimer(time.Millisecond)
	at := <-tm.C()
	if at.Before(before) || c.Now().Before(at) {
		t.Fatalf("real timer fired at %v, outside [%v, now]", at, before)
	}
	tm.Reset(time.Hour)
	if !tm.Stop() {
		t.Fatal("Stop() after Reset = false")
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	l := actor.NewLatest[string]()
	if _, ok := l.Take(); ok {
		t.Fatal("Take() on an empty cell reported a value")
	}
	l.Set("a")
	l.Set("b")
	<-l.Changed()
	if v, ok := l.Take(); !ok || v != "b" {
		t.Fatalf("Take() = %q, %v; want the newest value %q", v, ok, "b")
	}
	if _, ok := l.Take(); ok {
		t.Fatal("a value was taken twice")
	}
	select {
	case <-l.Changed():
		t.Fatal("a wake-up is pending after the value was taken")
	default:
	}

	done := make(chan string)
	go func() {
		<-l.Changed()
		v, _ := l.Take()
		done <- v
	}()
	l.Set("c")
	if v := <-done; v != "c" {
		t.Fatalf("reader woke with %q, want %q", v, "c")
	}
}
