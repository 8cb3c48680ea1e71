// Package ioloop is the skeleton the I/O actors (members, partset,
// claims) share: take the session state, notice a new connection, reset
// the retry pacer, attempt the ZooKeeper work while Up. Written once, so
// that a fix to it lands in all three.
package ioloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/retry"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures a [Loop]. Session and What are required.
type Config struct {
	Session *actor.Latest[zksession.State]
	Clock   actor.Clock  // default actor.RealClock()
	Logger  *slog.Logger // default: discard
	// What names the work in the retry log: "zkalloc: <What> failed;
	// retrying".
	What string
	// Fatal, if not nil, says which errors of the work end the actor,
	// besides those that always do: the refusals of the credentials or
	// the ACL that no retry changes (see [Permanent]).
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
	st   zksession.State
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
// [zksession.State.NewConnection]). On a new connection the pending retry
// is cancelled and the delays reset: a failure in the previous
// connection says nothing of this one.
func (l *Loop) Take() (fresh, ok bool) {
	st, ok := l.cfg.Session.Take()
	if !ok {
		return false, false
	}
	fresh = st.NewConnection(l.st.State)
	if fresh {
		l.pace.Reset()
	}
	l.st = st
	return fresh, true
}

// State returns the session state last taken.
func (l *Loop) State() zksession.State { return l.st }

// Attempt runs work if the session is Up and no retry is pending, and
// paces the attempts that follow (see [retry.Pacer.Attempt]). It reports
// stop when the actor must return, with the error it returns.
func (l *Loop) Attempt(ctx context.Context, work func() error) (stop bool, err error) {
	if l.st.Status != session.Up {
		return false, nil
	}
	stop, err = l.pace.Attempt(ctx, l.cfg.Logger, l.cfg.What, work, l.fatal)
	if stop && err != nil {
		err = Permanent(err)
	}
	return stop, err
}

func (l *Loop) fatal(err error) bool {
	return IsPermanent(err) || l.cfg.Fatal != nil && l.cfg.Fatal(err)
}

// IsPermanent reports whether err holds an answer of ZooKeeper's that no
// retry changes while the ACLs and the credentials stay as they are:
// NoAuth (an ACL refuses this client), InvalidACL or AuthFailed. Retrying
// those would only flood the server and the log.
func IsPermanent(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrInvalidACL) || errors.Is(err, zk.ErrAuthFailed)
}

// Permanent returns err with what it means said in ZooKeeper's own terms
// if [IsPermanent] holds, and err otherwise; err stays wrapped.
func Permanent(err error) error {
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("%w (ZooKeeper answered NoAuth: the ACL of the node, or of its parent for a create or delete, does not grant this client's credentials, Config.Auth, the permission; this is not retried)", err)
	case errors.Is(err, zk.ErrInvalidACL):
		return fmt.Errorf("%w (ZooKeeper answered InvalidACL: an ACL of scheme \"auth\" needs credentials that identify the client, such as digest; this is not retried)", err)
	case errors.Is(err, zk.ErrAuthFailed):
		return fmt.Errorf("%w (ZooKeeper answered AuthFailed: it refuses the credentials; this is not retried)", err)
	}
	return err
}

// C fires when a scheduled retry is due; then call Fired.
func (l *Loop) C() <-chan time.Time { return l.pace.C() }

// Fired records that the scheduled retry is due.
func (l *Loop) Fired() { l.pace.Fired() }

// Stop stops the retry timer.
func (l *Loop) Stop() { l.pace.Stop() }
