// Package retry paces the actors' retries of failed ZooKeeper work.
package retry

import (
	"context"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkalloc/zkalloc/actor"
)

// Pacer spaces an actor's attempts after failures: a first retry after
// about 50ms, growing to at most 2s apart, and never giving up (backoff's
// default would stop after 15 minutes, leaving a member silently idle).
// It waits on the actor's own clock, in the actor's own select loop. The
// I/O actors use it through ioloop.Loop, which does this:
//
//	for {
//		if hasWork && up {
//			if stop, err := p.Attempt(ctx, log, "update", work, isFatal); stop {
//				return err
//			}
//		}
//		select {
//		case <-session.Changed():
//			st := take()
//			if st.NewConnection(prev) {
//				p.Reset() // what failed says nothing of the new connection
//			}
//		case <-p.C():
//			p.Fired()
//		...
//		}
//	}
//
// A Pacer belongs to one actor and is not safe for concurrent use.
type Pacer struct {
	bo      *backoff.ExponentialBackOff
	timer   actor.Timer
	waiting bool
}

// NewPacer returns a pacer on clock c; call Stop when done.
func NewPacer(c actor.Clock) *Pacer {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 50 * time.Millisecond
	bo.MaxInterval = 2 * time.Second
	bo.MaxElapsedTime = 0
	// NewExponentialBackOff has already started from its own 500 ms
	// default: start again from ours.
	bo.Reset()
	return &Pacer{bo: bo, timer: actor.StoppedTimer(c)}
}

// Ready reports whether work may be attempted: no retry is pending.
func (p *Pacer) Ready() bool { return !p.waiting }

// Failed schedules the next attempt and returns how long until then.
func (p *Pacer) Failed() time.Duration {
	d := p.bo.NextBackOff()
	p.timer.Reset(d)
	p.waiting = true
	return d
}

// Succeeded resets the delays.
func (p *Pacer) Succeeded() { p.bo.Reset() }

// Reset cancels a scheduled attempt and resets the delays, for when what
// failed has changed, such as a new connection: work may be attempted at
// once.
func (p *Pacer) Reset() {
	p.timer.Stop()
	p.waiting = false
	p.bo.Reset()
}

// C fires when a scheduled attempt is due; then call Fired.
func (p *Pacer) C() <-chan time.Time { return p.timer.C() }

// Fired records that the scheduled attempt is due.
func (p *Pacer) Fired() { p.waiting = false }

// Stop stops the timer.
func (p *Pacer) Stop() { p.timer.Stop() }

// Attempt runs work if no retry is pending and paces what follows: a
// success resets the delays; a failure schedules the next attempt and is
// logged as "zkalloc: <what> failed; retrying". It reports stop when the
// actor must return: with work's error if fatal says so (fatal may be
// nil), or with nil if ctx is done, since then the error is the
// connection closing under an actor that is shutting down.
func (p *Pacer) Attempt(ctx context.Context, log *slog.Logger, what string, work func() error, fatal func(error) bool) (stop bool, err error) {
	if !p.Ready() {
		return false, nil
	}
	switch err := work(); {
	case err == nil:
		p.Succeeded()
	case fatal != nil && fatal(err):
		return true, err
	case ctx.Err() != nil:
		return true, nil
	default:
		log.Warn("zkalloc: "+what+" failed; retrying", "in", p.Failed(), "err", err)
	}
	return false, nil
}
