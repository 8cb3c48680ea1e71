package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/retry"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// errAgain says that the head moved under an attempt (another member
// wrote, or a node it named is gone): read it again at once.
var errAgain = errors.New("record: the head moved; read it again")

// zkError is a ZooKeeper request's failure other than the answers the
// protocol expects (BadVersion, NodeExists, NoNode): [Runner.Assign]
// retries it, paced, until its context ends.
type zkError struct {
	op  string // what failed, for the log: "read the head", "write the record"...
	err error
}

func (e *zkError) Error() string { return "record: " + e.op + ": " + e.err.Error() }
func (e *zkError) Unwrap() error { return e.err }

// call is the state of one [Runner.Assign] call.
type call struct {
	job decision.Job
	// staggerEnd is when this call's turn to compute over the head of
	// mzxid staggerOver (0 when absent) comes; -1 before any. A wait
	// cut short by something else than the head's change (a new session
	// state) goes on until then.
	staggerOver int64
	staggerEnd  time.Time
	// missing is the share node found missing under the head of mzxid
	// missingAt; found missing again under the same head, the record is
	// broken, not moving on.
	missing   string
	missingAt int64
	// What happened, for the log.
	waited  bool
	outcome string
}

// Assign returns this member's partitions in the group's agreed record
// for job's views: the record whose member and partition views' zxids
// are job.MembersZxid and job.PartitionsZxid, read if a member wrote it
// already, else computed with [rebalance.Sticky] from the previous
// record and written with a compare-and-set on the head (docs/sticky.md,
// "Writing a record"). It returns ctx's error once ctx ends, and
// Sticky's or the codec's errors (such as one wrapping
// [rebalance.ErrNoMembers] when every member is drained), for which the
// caller keeps the assignment it has.
//
// One call goes, until it returns:
//
//  1. Read the head, with a watch. If it is for job's views, read this
//     member's share node (unless its data is cached: share nodes never
//     change) and return it.
//  2. If the head is newer than job's views in either zxid, this
//     member's views are behind: wait for the head to change, or for
//     ctx (the caller cancels it when it has a newer job).
//  3. If the head is older in both, or absent, wait this member's turn
//     for another member to write it, going back to 1 if the head
//     changes: no wait for the member that wrote the head (it has the
//     record decoded), else its rank among the job's live members,
//     plus one over a head, times [Config].Step. Then decode the
//     previous record, compute the next with [rebalance.Sticky] and
//     write it, in one multi with the head's compare-and-set (or in
//     several requests when it is larger than one may be), delete the
//     nodes no head names any more, and return this member's share as
//     written. If another member wrote first, go back to 1.
//
// A head of a later format (assignment.ErrNewerFormat) is neither read
// nor written over: it waits, as in 2, for a head it can read.
//
// While the session is not up, it waits for it. ZooKeeper's refusals of
// the credentials or the ACL (NoAuth, InvalidACL, AuthFailed) are
// returned; other failures are retried with paced backoff until ctx
// ends, and logged at WARN once per kind. A request in flight is not
// interrupted: a cancelled call returns once its current request has.
//
// Assign must not be called concurrently with itself.
func (r *Runner) Assign(ctx context.Context, job decision.Job) ([]rebalance.Partition, error) {
	start := r.cfg.Clock.Now()
	pace := retry.NewPacer(r.cfg.Clock)
	defer pace.Stop()
	c := &call{job: job, staggerOver: -1}
	for {
		if err := ctx.Err(); err != nil {
			r.done(c, start, "cancelled")
			return nil, err
		}
		r.takeSession()
		if r.st.Status != session.Up || !pace.Ready() {
			select {
			case <-ctx.Done():
			case <-r.cfg.Session.Changed():
			case <-pace.C():
				pace.Fired()
			}
			continue
		}
		out, err := r.try(ctx, c)
		var zerr *zkError
		switch {
		case err == nil:
			r.done(c, start, c.outcome)
			return out, nil
		case errors.Is(err, errAgain):
		case errors.As(err, &zerr):
			if ctx.Err() != nil {
				continue
			}
			if ioloop.IsPermanent(err) {
				r.done(c, start, "failed")
				return nil, ioloop.Permanent(err)
			}
			r.warn(zerr.op, zerr.err, "in", pace.Failed())
		default:
			if ctx.Err() != nil {
				r.done(c, start, "cancelled")
			} else {
				r.done(c, start, "failed: "+err.Error())
			}
			return nil, err
		}
	}
}

// done logs what one Assign call did.
func (r *Runner) done(c *call, start time.Time, outcome string) {
	r.log.Debug("zkalloc: assignment record", "outcome", outcome, "waited", c.waited,
		"members_zxid", c.job.MembersZxid, "partitions_zxid", c.job.PartitionsZxid,
		"took", r.cfg.Clock.Now().Sub(start))
}

// try makes one attempt at c's job: it reads the head and does what
// [decide] says. It returns errAgain when the head must be read again,
// a *zkError for a failed request, ctx's error when ctx ends while it
// waits.
func (r *Runner) try(ctx context.Context, c *call) ([]rebalance.Partition, error) {
	if err := r.readHead(ctx); err != nil {
		return nil, err
	}
	if r.newer {
		// A newer version of zkalloc wrote it: neither read nor
		// overwritten, until a head this version reads replaces it.
		c.waited = true
		_, err := r.await(ctx, nil)
		return nil, err
	}
	p := decide(r.head, c.job, r.cfg.Member, r.cfg.Step, r.warm())
	switch p.act {
	case match:
		out, err := r.share(c)
		if err == nil {
			c.outcome = fmt.Sprintf("matched generation %d", r.head.Generation)
		}
		return out, err
	case wait:
		c.waited = true
		_, err := r.await(ctx, nil)
		return nil, err
	}
	now := r.cfg.Clock.Now()
	if c.staggerOver != r.mzxid {
		c.staggerOver, c.staggerEnd = r.mzxid, now.Add(p.delay)
	}
	if left := c.staggerEnd.Sub(now); left > 0 {
		t := r.cfg.Clock.NewTimer(left)
		defer t.Stop()
		if timedOut, err := r.await(ctx, t.C()); !timedOut {
			return nil, err
		}
	}
	return r.computeAndWrite(ctx, c)
}

// warm reports whether the runner holds the placement of the head read
// decoded: it wrote that head, or decoded it.
func (r *Runner) warm() bool {
	return r.head != nil && r.placementOf != nil && bytes.Equal(r.placementOf, r.headData)
}

// await waits for the head's watch, ctx, or timer (nil: none), and for
// a session state that needs the head read again: not up, or up on a
// new connection (whose watches are not this one's). It reports
// timedOut when timer fired first; else it returns errAgain, or ctx's
// error.
func (r *Runner) await(ctx context.Context, timer <-chan time.Time) (timedOut bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-r.watch:
			r.watch = nil
			return false, errAgain
		case <-r.cfg.Session.Changed():
			r.takeSession()
			if r.st.Status != session.Up || r.watch == nil {
				return false, errAgain
			}
		case <-timer:
			return true, nil
		}
	}
}

// takeSession takes the newest session state, if a new one is waiting.
// On a new connection the head's watch is dropped, to be armed again.
func (r *Runner) takeSession() {
	st, ok := r.cfg.Session.Take()
	if !ok {
		return
	}
	if st.NewConnection(r.st.State) {
		r.watch = nil
	}
	r.st = st
}

// warn logs a failure: at WARN the first time for each kind (what
// failed, and the innermost error), at DEBUG after, with args.
func (r *Runner) warn(op string, err error, args ...any) {
	inner := err
	for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
		inner = u
	}
	kind := op + ": " + inner.Error()
	level := slog.LevelDebug
	if !r.warned[kind] {
		r.warned[kind] = true
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, "zkalloc: assignment record: "+op+" failed (logged at WARN once per kind)", append(args, "err", err)...)
}

// zkErr wraps a request's failure as a *zkError, or nil.
func zkErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &zkError{op: op, err: err}
}

// isAny reports whether err is one of targets.
func isAny(err error, targets ...error) bool {
	return slices.ContainsFunc(targets, func(t error) bool { return errors.Is(err, t) })
}

// fired reports whether the watch w has fired (or closed).
func fired(w <-chan zk.Event) bool {
	select {
	case <-w:
		return true
	default:
		return false
	}
}
