package decision

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// hasLog reports whether a log so far contains part.
func (h *core) hasLog(part string) bool {
	return slices.ContainsFunc(h.logs, func(l Log) bool { return strings.Contains(l.Msg, part) })
}

func (h *core) close() {
	h.c.Close("allocator closing")
	h.drain()
}

func TestCoreCloseRevokesEverythingAndDrainsOnAck(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 3))
	h.close()
	if h.c.Drained() {
		t.Fatal("drained before the consumer received the final Update")
	}
	u := h.next()
	if len(u.Assigned) != 0 || !eq(u.Revoked, actortest.Parts("t", 0, 1, 2)) || !strings.Contains(u.Reason, "closing") {
		t.Fatalf("final update %+v, want everything revoked with a reason that says closing", u)
	}
	if cur := h.current(); len(cur.Assigned) != 0 {
		t.Fatalf("Current %+v after Close, want nothing assigned", cur)
	}
	if h.c.Drained() {
		t.Fatal("drained before the consumer acked the final Update")
	}
	h.noDesired("while draining: the claims stay until the consumer has stopped")
	// Nothing moves any more: a view that would assign more publishes
	// nothing, and wants no claim.
	h.members(view(1, 1, 9, "a"))
	h.parts(parts(1, 1, 10, 0, 1, 2, 3))
	h.none()
	h.noDesired("after Close")
	h.ack(u)
	if h.desired == nil || len(h.desired.Partitions) != 0 {
		t.Fatalf("Want %+v once the consumer acked the final Update; want the release of every claim", h.desired)
	}
	h.grant(*h.desired)
	if !h.c.Drained() {
		t.Fatal("not drained once the consumer acked the final Update and the claims were released")
	}
	if !h.wake.IsZero() {
		t.Fatalf("wake at %v once drained", h.wake.Sub(t0))
	}
}

// The final Update is acked, from Current, before it is delivered: the
// consumer may still work on what it last received until then.
func TestCoreCloseWaitsForDelivery(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.ack(h.alone(0))
	h.close()
	h.ack(h.current())
	if h.c.Drained() {
		t.Fatal("drained before the final Update was delivered")
	}
	h.next()
	if !h.c.Drained() {
		t.Fatal("not drained once the acked final Update was delivered")
	}
}

func TestCoreCloseDrainsAfterReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{releaseTimeout: rt})
	h.alone(0)
	h.close()
	h.next() // delivered, never acked
	if want := h.now.Add(rt); !h.wake.Equal(want) {
		t.Fatalf("wake at %v, want the drain's end at %v", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(rt - time.Nanosecond)
	if h.c.Drained() {
		t.Fatal("drained before ReleaseTimeout without an ack")
	}
	h.advance(time.Nanosecond)
	if _, ok := h.errorLog("did not ack the final Update"); !h.c.Drained() || !ok {
		t.Fatalf("drained %v, logs %v; want drained and the late ack logged at ERROR", h.c.Drained(), h.logs)
	}
}

// The drain's clock starts when the consumer receives the final Update,
// as a hand-off's does: a consumer busy for longer than ReleaseTimeout
// before it reads the final Update still gets ReleaseTimeout to stop.
// One that never reads it is given undeliveredFactor × ReleaseTimeout
// from Close, so that Close stays bounded. Before, the drain ended
// ReleaseTimeout after Close, received or not.
func TestCoreCloseDrainStartsAtDelivery(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	tests := []struct {
		name     string
		received time.Duration // after Close; 0: never
		drained  time.Duration // after Close
		log      string
	}{
		{"received late", rt + rt/2, rt + rt/2 + rt, "did not ack the final Update"},
		{"received just before the undelivered bound", undeliveredFactor*rt - time.Second, undeliveredFactor*rt - time.Second + rt, "did not ack the final Update"},
		{"never received", 0, undeliveredFactor * rt, "did not receive the final Update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{releaseTimeout: rt})
			h.ack(h.alone(0, 1))
			h.close()
			closed := h.now
			if want := closed.Add(undeliveredFactor * rt); !h.wake.Equal(want) {
				t.Fatalf("wake at %v, want the undelivered bound at %v", h.wake.Sub(t0), want.Sub(t0))
			}
			if tt.received != 0 {
				h.advance(tt.received)
				if h.c.Drained() {
					t.Fatal("drained before the consumer received the final Update")
				}
				h.next()
				if want := h.now.Add(rt); !h.wake.Equal(want) {
					t.Fatalf("wake at %v after the delivery, want ReleaseTimeout after it, %v", h.wake.Sub(t0), want.Sub(t0))
				}
			}
			h.advance(closed.Add(tt.drained - time.Nanosecond).Sub(h.now))
			if h.c.Drained() {
				t.Fatalf("drained %v after Close, want %v", h.now.Sub(closed), tt.drained)
			}
			if _, ok := h.errorLog("closing anyway"); ok {
				t.Fatal("the forced end of the drain logged before it came")
			}
			h.advance(time.Nanosecond)
			if !h.c.Drained() {
				t.Fatalf("not drained %v after Close", tt.drained)
			}
			if _, ok := h.errorLog(tt.log); !ok {
				t.Fatalf("logs %v, want %q at ERROR", h.logs, tt.log)
			}
			if !h.wake.IsZero() {
				t.Errorf("wake at %v once drained", h.wake.Sub(t0))
			}
		})
	}
}

func TestCoreCloseBeforeAnyUpdateIsDrained(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.up(1, 1)
	h.close()
	h.none()
	if !h.c.Drained() {
		t.Fatal("not drained: nothing was ever assigned")
	}
}

// Once the session has ended on the server, so have the claims: there is
// nothing left to keep by waiting. A session the server closed, expired
// or replaced has; one whose lease ran out here may not have.
func TestCoreCloseEndsWhenTheSessionEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		st   session.State
	}{
		{"expired", session.State{Status: session.Lost, SessionID: 1, Reconnects: 1, Ended: true}},
		{"closed", session.State{Status: session.Closed}},
		{"replaced", session.State{Status: session.Up, SessionID: 2, Reconnects: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{grace: time.Hour})
			h.alone(0)
			h.close()
			h.next()
			h.session(session.Suspended, 1, 1)
			if h.c.Drained() {
				t.Fatal("drained while suspended: the session, and its claims, may still be alive")
			}
			h.c.SessionChanged(tt.st)
			h.drain()
			if !h.c.Drained() {
				t.Fatalf("not drained once the session is %s", tt.name)
			}
		})
	}
}

// A lease that ran out here is not a session that ended: the server may
// still hold the session and every claim, and let it resume. Close (or a
// fatal stop) then still waits for the consumer's ack, or for the drain's
// bound, before the claims are given up. Before, Lost counted as "claims
// gone", and the claims went before the consumer had stopped.
func TestCoreCloseAfterALostLeaseStillDrains(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	for _, acked := range []bool{true, false} {
		t.Run(fmt.Sprintf("acked=%v", acked), func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{releaseTimeout: rt})
			h.alone(0)
			h.session(session.Lost, 1, 1) // the lease ran out; Ended is not set
			lost := h.next()
			if len(lost.Assigned) != 0 {
				t.Fatalf("on Lost: %+v, want everything revoked", lost)
			}
			h.close()
			if h.c.Drained() {
				t.Fatal("drained at once after a lost lease: the consumer has not acked the revocation")
			}
			if h.wake.IsZero() {
				t.Fatal("no wake-up for the drain's bound")
			}
			if acked {
				h.ack(lost)
				if !h.c.Drained() {
					t.Fatal("not drained once the consumer acked everything")
				}
				return
			}
			h.advance(rt - time.Nanosecond)
			if h.c.Drained() {
				t.Fatal("drained before the drain's bound without an ack")
			}
			h.advance(time.Nanosecond)
			if !h.c.Drained() {
				t.Fatal("not drained at the drain's bound")
			}
		})
	}
}

// With no session ever, there are no claims to keep.
func TestCoreCloseWithoutASessionIsDrained(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.session(session.Connecting, 0, 0)
	h.close()
	if !h.c.Drained() {
		t.Fatal("not drained with no session ever")
	}
}

// A job that waits for a newer view (StartJob said JobWait) has not run:
// however long it waits, the core does not log the strategy as stalled,
// and times it from when it starts. (Before, the stall counted from when
// the job was asked for, and a wait past StrategyStall logged "strategy
// has not returned" for a strategy that had not started.)
func TestCoreDoesNotTimeAWaitingJob(t *testing.T) {
	t.Parallel()
	c := NewCore(Config{Member: "a", Strategy: "slow", ReleaseTimeout: time.Minute}, t0)
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1})
	c.MembersRead(view(1, 1, 2, "a"))
	c.PartitionsRead(parts(1, 1, 3, 0))
	job := c.Ready().Compute
	if job == nil {
		t.Fatal("no job")
	}
	if got := c.StartJob(*job, true); got != JobWait {
		t.Fatalf("StartJob(outdated) = %v, want JobWait", got)
	}
	c.Tick(t0.Add(2 * StrategyStall))
	if r := c.Ready(); len(r.Logs) != 0 || !r.Wake.IsZero() {
		t.Fatalf("Ready %+v while the job waits, want no log and no wake-up", r)
	}
	if got := c.StartJob(*job, false); got != JobRun {
		t.Fatalf("StartJob = %v, want JobRun", got)
	}
	if r := c.Ready(); !r.Wake.Equal(t0.Add(3 * StrategyStall)) {
		t.Fatalf("Ready %+v, want the stall timed from the start", r)
	}
}

func TestCoreLogsAStalledStrategy(t *testing.T) {
	t.Parallel()
	c := NewCore(Config{Member: "a", Strategy: "slow", ReleaseTimeout: time.Minute}, t0)
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1})
	c.MembersRead(view(1, 1, 2, "a"))
	c.PartitionsRead(parts(1, 1, 3, 0))
	r := c.Ready()
	if r.Compute == nil || !r.Wake.IsZero() {
		t.Fatalf("Ready %+v, want a job and no wake-up before it starts", r)
	}
	if got := c.StartJob(*r.Compute, false); got != JobRun {
		t.Fatalf("StartJob = %v, want JobRun", got)
	}
	if r := c.Ready(); !r.Wake.Equal(t0.Add(StrategyStall)) {
		t.Fatalf("Ready %+v, want a wake-up when the started job is late", r)
	}
	c.Tick(t0.Add(StrategyStall))
	r = c.Ready()
	if len(r.Logs) != 1 || !strings.Contains(r.Logs[0].Msg, "strategy has not returned") || !r.Wake.IsZero() {
		t.Fatalf("Ready %+v once the strategy is late, want it logged once and nothing more due", r)
	}
	// Revocations go on meanwhile.
	c.SessionChanged(session.State{Status: session.Lost, SessionID: 1, Reconnects: 1})
	c.Tick(t0.Add(time.Hour))
	if r := c.Ready(); len(r.Logs) != 0 {
		t.Fatalf("logged again: %v", r.Logs)
	}
}

// Once the consumer has acked the final Update, the claims and their
// hold records are released before the session closes: the core asks
// for no claim, and the drain ends when the claims actor has answered
// that with nothing held, so that the next owners find nothing in their
// way. Before, the drain ended at the ack and the records stayed, and
// every next owner read each one to take its partition over.
func TestCoreCloseReleasesTheClaimsAfterTheAck(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 3))
	h.close()
	u := h.next()
	h.desired = nil
	h.ack(u)
	if h.desired == nil || len(h.desired.Partitions) != 0 {
		t.Fatalf("Want %+v after the ack of the final Update, want one of no claim", h.desired)
	}
	if h.c.Drained() {
		t.Fatal("drained before the claims were released")
	}
	final := *h.desired
	h.grant(final, actortest.Parts("t", 0)...) // one release still to go
	if h.c.Drained() {
		t.Fatal("drained with a claim still held")
	}
	h.grant(final)
	if !h.c.Drained() || h.c.DrainEnd() != DrainAcked {
		t.Fatalf("drained %v (%v) once nothing is held; want drained, acked", h.c.Drained(), h.c.DrainEnd())
	}
}

// A release that does not finish ends the drain ReleaseTimeout after
// the ack all the same, as acked: the consumer has stopped, and the
// records left are taken over as after a crash.
func TestCoreCloseReleaseEndsAfterReleaseTimeout(t *testing.T) {
	t.Parallel()
	const rt = 10 * time.Second
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true, releaseTimeout: rt})
	h.ack(h.settled([]string{"a"}, 3))
	h.close()
	h.advance(time.Second)
	h.ack(h.next())
	if h.c.Drained() {
		t.Fatal("drained before the claims were released")
	}
	if want := h.now.Add(rt); !h.wake.Equal(want) {
		t.Fatalf("wake at %v, want the release's bound at %v", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(rt - time.Nanosecond)
	if h.c.Drained() {
		t.Fatal("drained before the release's bound")
	}
	h.advance(time.Nanosecond)
	if !h.c.Drained() || h.c.DrainEnd() != DrainAcked || h.hasLog("did not ack") {
		t.Fatalf("drained %v (%v), logs %v; want drained as acked at the bound, no error", h.c.Drained(), h.c.DrainEnd(), h.logs)
	}
}

// The session ending during the release ends the drain as acked: the
// claims went with it.
func TestCoreCloseReleaseEndsWithTheSession(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.ack(h.settled([]string{"a"}, 3))
	h.close()
	h.ack(h.next())
	if h.c.Drained() {
		t.Fatal("drained before the claims were released")
	}
	h.c.SessionChanged(session.State{Status: session.Lost, SessionID: 1, Reconnects: 1, Ended: true})
	h.drain()
	if !h.c.Drained() || h.c.DrainEnd() != DrainAcked {
		t.Fatalf("drained %v (%v) once the session ended; want drained, acked", h.c.Drained(), h.c.DrainEnd())
	}
}
