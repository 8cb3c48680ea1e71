package session

import (
	"context"
	"time"

	"github.com/zkalloc/zkalloc/actor"
)

// syncer sends the lease's syncs (see lease.go) on a goroutine of its own:
// a sync through a follower cut off from its leader is not answered until
// the follower gives up on the leader, syncLimit ticks later, and Run must
// go on meanwhile. It sends one sync for each start, and hands back each
// result on results.
//
// Why a sync and not another request: it is the one read a follower must
// pass through the leader (a write such as setData on our own node would
// too, but it is a transaction every member of the ensemble logs and
// applies), and it changes nothing.
type syncer struct {
	gate    *gatedConn
	clock   actor.Clock
	starts  chan struct{}   // unbuffered: Run sends one only while none is in flight
	results chan syncResult // unbuffered: run sends each one while Run waits for it
}

// syncResult is the outcome of one sync.
type syncResult struct {
	sent    time.Time // taken before the request could be sent
	session int64     // the session it went in; 0 if it never went
	err     error
}

func newSyncer(gate *gatedConn, clock actor.Clock) *syncer {
	return &syncer{gate: gate, clock: clock, starts: make(chan struct{}), results: make(chan syncResult)}
}

// run sends a sync for each start until ctx is done.
func (y *syncer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-y.starts:
		}
		r := syncResult{sent: y.clock.Now()}
		r.session, r.err = y.gate.sync()
		select {
		case <-ctx.Done():
			return
		case y.results <- r:
		}
	}
}

// start asks run for a sync; it reports false if ctx ended first.
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
