package zksession

import (
	"context"
	"time"

	"github.com/zkalloc/zkalloc/actor"
)

// syncer sends the lease's requests (see lease.go) on a goroutine of its
// own: a sync, or in the quorum lease a check that the ensemble must
// commit. Either one through a follower cut off from its leader, or
// through a leader cut off from its quorum, is not answered until that
// server gives up, syncLimit ticks or so later, and Run must go on
// meanwhile. It sends one request for each start, and hands back each
// result on results.
//
// Why a sync and not another request: it is the one read a follower must
// pass through the leader, and it changes nothing. A write passes through
// the leader too, and only a write shows that a quorum saw the session;
// but it is a transaction every server of the ensemble logs, so the
// quorum lease is for members that need it (DisconnectGrace).
type syncer struct {
	gate    *gatedConn
	clock   actor.Clock
	check   string          // the node a quorum lease checks; empty: syncs
	starts  chan struct{}   // unbuffered: Run sends one only while none is in flight
	results chan syncResult // unbuffered: run sends each one while Run waits for it
}

// syncResult is the outcome of one request.
type syncResult struct {
	sent      time.Time // taken before the request could be sent
	session   int64     // the session it went in; 0 if it never went
	committed bool      // a check the ensemble committed
	err       error
}

// newSyncer returns a syncer that sends syncs, or checks of the node at
// check if it is not empty.
func newSyncer(gate *gatedConn, clock actor.Clock, check string) *syncer {
	return &syncer{gate: gate, clock: clock, check: check, starts: make(chan struct{}), results: make(chan syncResult)}
}

// run sends a request for each start until ctx is done.
func (y *syncer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-y.starts:
		}
		r := syncResult{sent: y.clock.Now()}
		if y.check != "" {
			r.session, r.err = y.gate.check(y.check)
			r.committed = r.err == nil
		} else {
			r.session, r.err = y.gate.sync()
		}
		select {
		case <-ctx.Done():
			return
		case y.results <- r:
		}
	}
}

// start asks run for a request; it reports false if ctx ended first.
func (y *syncer) start(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case y.starts <- struct{}{}:
		return true
	}
}

// syncPath is what the lease's syncs name; any path will do, as the
// server neither checks nor needs it for the sync's ordering.
const syncPath = "/"

// waitDone waits for a value on done, or for it to be closed, for at most
// d, and reports whether one came.
func waitDone[T any](done <-chan T, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
