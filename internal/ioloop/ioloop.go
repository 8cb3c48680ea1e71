// Package ioloop is the skeleton the I/O actors (membership, partitions,
// claims) share: take the session state, notice a new connection, reset
// the retry pacer, attempt the ZooKeeper work while Up. Written once, so
// that a fix to it lands in all three.
package ioloop

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/retry"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures a [Loop]. Session and What are required.
type Config struct {
	Session *actor.Latest[session.State]
	Clock   actor.Clock  // default actor.RealClock()
	Logger  *slog.Logger // default: discard
	// What names the work in the retry log: "zkalloc: <What> failed;
	// retrying".
	What string
	// Fatal, if not nil, says which errors of the work end the actor.
	Fatal func(error) bool
}

// Loop holds an I/O actor's session state and the pacing of its retries.
// The actor's Run uses it so:
//
//	loop := ioloop.New(ioloop.Config{Session: cfg.Session, What: "update", ...})
//	defer loop.Stop()
//	for {
//		if hasWork {
//			if stop, err := loop.Attempt(ctx, work); stop {
//				return err
//			}
//		}
//		select {
//		case <-ctx.Done():
//			return nil
//		case <-loop.Changed():
//			if fresh, ok := loop.Take(); ok {
//				onSession(loop.State(), fresh)
//			}
//		case <-loop.C():
//			loop.Fired()
//		// ... the actor's own cases
//		}
//	}
//
// A Loop belongs to one actor and is not safe for concurrent use.
type Loop struct {
	cfg  Config
	st   session.State
	pace *retry.Pacer
}

// New returns a loop; it starts nothing. Call Stop when done.
func New(cfg Config) *Loop {
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Loop{cfg: cfg, pace: retry.NewPacer(cfg.Clock)}
}

// Changed is ready when a new session state is waiting; then call Take.
func (l *Loop) Changed() <-chan struct{} { return l.cfg.Session.Changed() }

// Take takes the newest session state, if one is waiting (ok), and
// reports whether it is Up on a new connection (fresh, see
// [session.State.NewConnection]). On a new connection the pending retry
// is cancelled and the delays reset: a failure in the previous
// connection says nothing of this one.
func (l *Loop) Take() (fresh, ok bool) {
	st, ok := l.cfg.Session.Take()
	if !ok {
		return false, false
	}
	fresh = st.NewConnection(l.st)
	if fresh {
		l.pace.Reset()
	}
	l.st = st
	return fresh, true
}

// State returns the session state last taken.
func (l *Loop) State() session.State { return l.st }

// Attempt runs work if the session is Up and no retry is pending, and
// paces the attempts that follow (see [retry.Pacer.Attempt]). It reports
// stop when the actor must return, with the error it returns.
func (l *Loop) Attempt(ctx context.Context, work func() error) (stop bool, err error) {
	if l.st.Status != session.Up {
		return false, nil
	}
	return l.pace.Attempt(ctx, l.cfg.Logger, l.cfg.What, work, l.cfg.Fatal)
}

// C fires when a scheduled retry is due; then call Fired.
func (l *Loop) C() <-chan time.Time { return l.pace.C() }

// Fired records that the scheduled retry is due.
func (l *Loop) Fired() { l.pace.Fired() }

// Stop stops the retry timer.
func (l *Loop) Stop() { l.pace.Stop() }
