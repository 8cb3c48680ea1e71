package actor

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is the time source injected into actors, so that unit tests can
// move time forward instead of sleeping.
type Clock interface {
	Now() time.Time
	// NewTimer returns a started timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer fires once on C after its duration. As with time.Timer since Go
// 1.23, a value not yet received when Stop or Reset is called is never
// delivered afterwards.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset stops the timer and starts it again with duration d.
	Reset(d time.Duration)
}

// RealClock returns the [Clock] of the time package.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

// FakeClock is a [Clock] for tests whose time moves only when
// [FakeClock.Advance] is called. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewFakeClock returns a fake clock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1)} // one slot, like a runtime timer: firing never blocks Advance
	t.Reset(d)
	return t
}

// Advance moves the fake time forward by d and fires, in order, every
// timer that is due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.when.After(c.now) {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	sort.SliceStable(due, func(i, j int) bool { return due[i].when.Before(due[j].when) })
	for _, t := range due {
		select {
		case t.c <- t.when:
		default:
		}
	}
	c.notifyLocked()
	c.mu.Unlock()
}

// Timers returns how many timers are waiting to fire.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitTimers blocks until at least n timers are waiting to fire, which
// tells a test that an actor has armed its timers, or until ctx is done.
func (c *FakeClock) WaitTimers(ctx context.Context, n int) error {
	return c.waitTimers(ctx, func(got int) bool { return got >= n })
}

// WaitNoTimers blocks until no timer is waiting to fire, which tells a
// test that an actor has stopped its timers, or until ctx is done.
func (c *FakeClock) WaitNoTimers(ctx context.Context) error {
	return c.waitTimers(ctx, func(got int) bool { return got == 0 })
}

func (c *FakeClock) waitTimers(ctx context.Context, done func(waiting int) bool) error {
	for {
		c.mu.Lock()
		got, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if done(got) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// removeLocked drops t from the waiting timers and reports whether it was
// there.
func (c *FakeClock) removeLocked(t *fakeTimer) bool {
	for i, w := range c.timers {
		if w == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock *FakeClock
	c     chan time.Time
	when  time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	active := c.removeLocked(t)
	t.drain()
	c.notifyLocked()
	return active
}

func (t *fakeTimer) Reset(d time.Duration) {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(t)
	t.drain()
	t.when = c.now.Add(d)
	if d <= 0 {
		t.c <- t.when
	} else {
		c.timers = append(c.timers, t)
	}
	c.notifyLocked()
}

func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// StoppedTimer returns a timer of c that is not running, for an actor that
// arms it later with Reset.
func StoppedTimer(c Clock) Timer {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return t
}
