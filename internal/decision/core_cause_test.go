package decision

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Each revocation says why (Update.Cause), and is counted by cause
// (Counters.Revoked*), each partition by its own.
func TestCoreRevokeCauses(t *testing.T) {
	t.Parallel()
	ts := actortest.Parts("t", 0, 1, 2, 3)
	tests := []struct {
		name    string
		revoke  func(h *core, d Want) // from a, alone with t:0..3 in session 1, all acked; d is the Want granted
		revoked []rebalance.Partition
		want    RevokeCause
		count   Counters // its revocation counters only
	}{
		{"another member joins", func(h *core, _ Want) { h.members(view(1, 1, 9, "a", "b")) },
			[]rebalance.Partition{ts[1], ts[3]}, RevokeHandoff, Counters{RevokedHandoff: 2}},
		{"partitions removed from the set", func(h *core, _ Want) { h.parts(parts(1, 1, 9, 0, 1)) },
			ts[2:], RevokeHandoff, Counters{RevokedHandoff: 2}},
		{"connection lost, no grace", func(h *core, _ Want) { h.session(session.Suspended, 1, 1) },
			ts, RevokeLost, Counters{RevokedLost: 4}},
		{"lease ran out", func(h *core, _ Want) { h.session(session.Lost, 1, 1) },
			ts, RevokeLost, Counters{RevokedLost: 4}},
		{"session replaced", func(h *core, _ Want) { h.up(2, 2) },
			ts, RevokeLost, Counters{RevokedLost: 4}},
		{"claim vanished, its record stands", func(h *core, d Want) { h.report(1, 1, d.Seq, ts[1:], ts[:1]) },
			ts[:1], RevokeHandoff, Counters{RevokedHandoff: 1}},
		{"claim and record gone", func(h *core, d Want) { h.report(1, 1, d.Seq, ts[1:], nil) },
			ts[:1], RevokeLost, Counters{RevokedLost: 1}},
		{"close", func(h *core, _ Want) { h.close() },
			ts, RevokeShutdown, Counters{RevokedShutdown: 4}},
		{"close with the lease run out", func(h *core, _ Want) {
			h.session(session.Lost, 1, 1)
			h.close()
		}, ts, RevokeLost, Counters{RevokedLost: 4}},
		{"give up", func(h *core, _ Want) { h.c.GiveUp("shutdown"); h.drain() },
			ts, RevokeShutdown, Counters{RevokedShutdown: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
			h.up(1, 1)
			h.members(view(1, 1, 2, "a"))
			h.parts(parts(1, 1, 3, 0, 1, 2, 3))
			d := h.nextDesired()
			h.report(1, 1, d.Seq, d.Partitions, nil)
			first := h.next()
			if first.Cause != RevokeNone {
				t.Fatalf("first Update's Cause %v, want none: nothing revoked", first.Cause)
			}
			h.ack(first)
			tt.revoke(h, d)
			u := h.next()
			if !eq(u.Revoked, tt.revoked) || u.Cause != tt.want {
				t.Fatalf("Revoked %v, Cause %v; want %v, %v", u.Revoked, u.Cause, tt.revoked, tt.want)
			}
			c := h.c.Counters()
			got := Counters{RevokedHandoff: c.RevokedHandoff, RevokedShutdown: c.RevokedShutdown, RevokedLost: c.RevokedLost}
			if got != tt.count {
				t.Errorf("counters %+v, want %+v", got, tt.count)
			}
		})
	}
}

// When Revoked folds several revocations, the most severe cause wins:
// lost over shutdown over hand-off. A delivery starts afresh.
func TestCoreRevokeCausesFold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []func(h *core)
		want  RevokeCause
	}{
		{"hand-off, then the connection lost", []func(h *core){
			func(h *core) { h.members(view(1, 1, 9, "a", "b")) },
			func(h *core) { h.session(session.Suspended, 1, 1) },
		}, RevokeLost},
		{"the connection lost, then close", []func(h *core){
			func(h *core) { h.session(session.Suspended, 1, 1) },
			func(h *core) { h.close() },
		}, RevokeLost},
		{"hand-off, then close", []func(h *core){
			func(h *core) { h.members(view(1, 1, 9, "a", "b")) },
			func(h *core) { h.close() },
		}, RevokeShutdown},
		{"hand-off, then more hand-off", []func(h *core){
			func(h *core) { h.members(view(1, 1, 9, "a", "b")) },
			func(h *core) { h.members(view(1, 1, 10, "a", "b", "c")) },
		}, RevokeHandoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
			h.ack(h.alone(0, 1, 2, 3, 4, 5))
			for _, step := range tt.steps {
				step(h) // published, not delivered
			}
			u := h.next()
			if u.Cause != tt.want || len(u.Revoked) == 0 {
				t.Fatalf("Revoked %v, Cause %v; want %v", u.Revoked, u.Cause, tt.want)
			}
		})
	}

	// A milder revocation after a more severe one does not hide it: a
	// claim lost, then a hand-off, both undelivered.
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{manualClaims: true})
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1, 2, 3, 4, 5))
	d := h.nextDesired()
	h.report(1, 1, d.Seq, d.Partitions, nil)
	h.ack(h.next())
	ts := actortest.Parts("t", 0, 1, 2, 3, 4, 5)
	h.report(1, 1, d.Seq, ts[:5], nil) // t:5's claim and record are gone
	h.members(view(1, 1, 9, "a", "b")) // t:1 and t:3 go to b
	if u := h.next(); !eq(u.Revoked, actortest.Parts("t", 1, 3, 5)) || u.Cause != RevokeLost {
		t.Fatalf("Revoked %v, Cause %v; want t:1, t:3 and t:5, lost", u.Revoked, u.Cause)
	}
	if c := h.c.Counters(); c.RevokedLost != 1 || c.RevokedHandoff != 2 {
		t.Errorf("counters %+v, want 1 lost and 2 handed off: each partition by its own cause", c)
	}

	// Once delivered, what was folded is gone: the next Update is judged
	// on its own revocations.
	h = newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.ack(h.alone(0, 1, 2, 3))
	h.session(session.Suspended, 1, 1)
	if u := h.next(); u.Cause != RevokeLost {
		t.Fatalf("on the connection's loss: Cause %v, want lost", u.Cause)
	}
	h.up(1, 2)
	h.members(view(1, 2, 9, "a"))
	h.parts(parts(1, 2, 9, 0, 1, 2, 3))
	if u := h.next(); u.Cause != RevokeNone || len(u.Assigned) != 4 {
		t.Fatalf("back: %+v, want everything assigned again and Cause none", u)
	}
	h.members(view(1, 2, 10, "a", "b"))
	if u := h.next(); u.Cause != RevokeHandoff {
		t.Fatalf("after b joined: Cause %v, want handoff (the earlier loss was delivered)", u.Cause)
	}
}

// SessionsLost counts each loss once: the lease running out and the
// session's end that follows are one loss; a session that comes up again
// and is lost again is another; a new session whose predecessor's loss
// was never seen (the loop takes the newest state only) counts one.
func TestCoreCountsSessionsLost(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.alone(0)
	steps := []struct {
		st   session.State
		want uint64
	}{
		{session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1}, 0},
		{session.State{Status: session.Lost, SessionID: 1, Reconnects: 1}, 1},
		{session.State{Status: session.Lost, SessionID: 1, Reconnects: 1, Ended: true}, 1},
		{session.State{Status: session.Connecting}, 1},
		{session.State{Status: session.Up, SessionID: 2, Reconnects: 2}, 1},
		{session.State{Status: session.Lost, SessionID: 2, Reconnects: 2}, 2},
		{session.State{Status: session.Up, SessionID: 2, Reconnects: 3}, 2}, // the lease ran out, the session resumed
		{session.State{Status: session.Suspended, SessionID: 2, Reconnects: 3}, 2},
		{session.State{Status: session.Up, SessionID: 3, Reconnects: 4}, 3}, // Lost of 2 not seen
		{session.State{Status: session.Up, SessionID: 3, Reconnects: 5}, 3},
		{session.State{Status: session.Closed}, 3},
	}
	for i, s := range steps {
		h.c.SessionChanged(s.st)
		h.drain()
		if got := h.c.Counters().SessionsLost; got != s.want {
			t.Fatalf("step %d (%v %d): SessionsLost %d, want %d", i, s.st.Status, s.st.SessionID, got, s.want)
		}
	}
}

// GiveUp ends the drain at once, without the ack, and says so; a drain
// already over keeps how it ended.
func TestCoreGiveUp(t *testing.T) {
	t.Parallel()
	t.Run("consumer working", func(t *testing.T) {
		t.Parallel()
		h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
		h.ack(h.alone(0, 1))
		h.close()
		h.next() // never acked
		if h.c.Drained() || h.c.DrainEnd() != DrainOpen {
			t.Fatalf("drain ended (%v) before the ack or GiveUp", h.c.DrainEnd())
		}
		h.c.GiveUp("shutdown's context ended")
		h.drain()
		if got := h.c.DrainEnd(); got != DrainGaveUp || !h.c.Drained() {
			t.Fatalf("DrainEnd %v after GiveUp, want gave up", got)
		}
		if _, ok := h.errorLog("stopped waiting for the consumer's ack"); !ok {
			t.Errorf("logs %v, want the give-up at ERROR", h.logs)
		}
		if !h.wake.IsZero() {
			t.Errorf("wake at %v once drained", h.wake.Sub(t0))
		}
		h.advance(time.Hour) // the drain's own bound passes: nothing changes
		if got := h.c.DrainEnd(); got != DrainGaveUp {
			t.Errorf("DrainEnd %v later, want it kept", got)
		}
	})
	t.Run("before Close", func(t *testing.T) {
		t.Parallel()
		h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
		h.ack(h.alone(0, 1))
		h.c.GiveUp("shutdown's context ended")
		h.drain()
		u := h.next()
		if len(u.Assigned) != 0 || u.Cause != RevokeShutdown {
			t.Fatalf("after GiveUp without Close: %+v, want everything revoked for a shutdown", u)
		}
		if got := h.c.DrainEnd(); got != DrainGaveUp {
			t.Fatalf("DrainEnd %v, want gave up", got)
		}
	})
	t.Run("consumer acked", func(t *testing.T) {
		t.Parallel()
		h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
		h.ack(h.alone(0, 1))
		h.close()
		h.ack(h.next())
		h.c.GiveUp("shutdown's context ended")
		h.drain()
		if got := h.c.DrainEnd(); got != DrainAcked {
			t.Fatalf("DrainEnd %v, want acked", got)
		}
		if _, ok := h.errorLog("stopped waiting"); ok {
			t.Errorf("logged a give-up when the consumer had acked: %v", h.logs)
		}
	})
	t.Run("nothing ever assigned", func(t *testing.T) {
		t.Parallel()
		h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
		h.c.GiveUp("shutdown before start")
		h.drain()
		h.none()
		if got := h.c.DrainEnd(); got != DrainAcked {
			t.Fatalf("DrainEnd %v, want acked: the consumer has nothing", got)
		}
	})
	t.Run("timed out first", func(t *testing.T) {
		t.Parallel()
		const rt = 10 * time.Second
		h := newCore(t, "a", rebalance.RoundRobin, coreOptions{releaseTimeout: rt})
		h.ack(h.alone(0))
		h.close()
		h.next()
		h.advance(rt)
		h.c.GiveUp("too late")
		h.drain()
		if got := h.c.DrainEnd(); got != DrainTimedOut {
			t.Fatalf("DrainEnd %v, want timed out", got)
		}
	})
}
