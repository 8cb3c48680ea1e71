package zkalloc

import (
	"time"

	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/session"
)

// Stats is a snapshot of an allocator, from [Allocator.Stats]. The
// counters count from [Allocator.Start] and never go down.
type Stats struct {
	// SessionState is [StateIdle] ("idle") before Start, then the
	// ZooKeeper session's: "connecting", "up", "suspended" (connection
	// lost, the session may resume), "lost" or "closed". SessionID is the
	// current session's, 0 if none yet.
	SessionState string
	SessionID    int64
	// SessionTimeout is the session timeout the server granted the
	// current session, 0 before the first. The server clamps the one
	// asked for ([Config.SessionTimeout]) to its bounds, minSessionTimeout
	// and maxSessionTimeout (by default 2 and 20 times its tickTime), and
	// a granted timeout that differs is logged once per session. It
	// bounds how soon the server expires a member whose process is gone,
	// and so how long the member's restart waits for its name.
	SessionTimeout time.Duration
	// Reconnects counts how often the connection came up again after the
	// first time, resumed session or new.
	Reconnects uint64
	// Generation, Members, Assigned and Pending describe the newest
	// Update (see [Update]): its generation and how many members,
	// assigned and pending partitions it lists.
	Generation int64
	Members    int
	Assigned   int
	Pending    int
	// Computes counts the strategy's runs; LastCompute is how long the
	// latest took, and ComputeTimes how long each took, in buckets
	// (its Count is Computes).
	Computes     uint64
	LastCompute  time.Duration
	ComputeTimes Histogram
	// HandoffsStarted counts partitions revoked from this member's
	// consumer while it held them, and HandoffsDone those of them it then
	// gave up (once acked, or after ReleaseTimeout) so the next owner could
	// take them. ReleaseTimeouts counts the ones given up without an ack.
	HandoffsStarted uint64
	HandoffsDone    uint64
	ReleaseTimeouts uint64
	// StrategyErrors counts strategy runs that failed (the previous
	// assignment was kept).
	StrategyErrors uint64
	// SessionsLost counts this member's lost sessions: each time the
	// session went "lost" (its lease ran out, it expired or was
	// replaced), once per loss.
	SessionsLost uint64
	// RevokedHandoff, RevokedShutdown and RevokedLost count the
	// partitions taken out of the assignment, by cause (see
	// [RevokeCause]; each partition by its own, where an Update's Cause
	// folds them).
	RevokedHandoff  uint64
	RevokedShutdown uint64
	RevokedLost     uint64
	// RecordWrites counts the sticky strategy's records this member
	// computed and wrote, and RecordConflicts those it computed but lost
	// to another member's write (a compare-and-set of the head that
	// failed): see docs/sticky.md. Usually one member of a group writes
	// each record; conflicts growing as fast as writes mean members
	// computing at the same time (a writer slower than the stagger
	// between them). Both stay 0 with a stateless strategy.
	RecordWrites    uint64
	RecordConflicts uint64
}

// StateIdle is [Stats.SessionState] before [Allocator.Start]: no session
// has been asked for yet. Start makes it "connecting" when it starts the
// member's loop, before it connects.
const StateIdle = "idle"

// Stats returns a snapshot of the allocator's state and counters. It is
// cheap (an atomic load) and safe for concurrent use; before Start it
// returns the zero Stats but for SessionState, [StateIdle].
func (a *Allocator) Stats() Stats { return a.reb.Stats() }

// statsOf makes the Stats of a member whose session is st, whose newest
// Update is cur, whose core has counted c, whose record runner (the
// sticky strategy) has written writes records and lost conflicts to
// another member's write, and whose strategy has run
// times.Count times, the latest for last.
func statsOf(st session.State, cur Update, c decision.Counters, writes, conflicts uint64, times Histogram, last time.Duration) Stats {
	s := Stats{
		SessionState:    st.Status.String(),
		SessionID:       st.SessionID,
		SessionTimeout:  sessionTimeout(st),
		Generation:      cur.Generation,
		Members:         len(cur.Members),
		Assigned:        len(cur.Assigned),
		Pending:         len(cur.Pending),
		Computes:        times.Count,
		LastCompute:     last,
		ComputeTimes:    times,
		HandoffsStarted: c.HandoffsStarted,
		HandoffsDone:    c.HandoffsDone,
		ReleaseTimeouts: c.ReleaseTimeouts,
		StrategyErrors:  c.StrategyErrors,
		SessionsLost:    c.SessionsLost,
		RevokedHandoff:  c.RevokedHandoff,
		RevokedShutdown: c.RevokedShutdown,
		RevokedLost:     c.RevokedLost,
		RecordWrites:    writes,
		RecordConflicts: conflicts,
	}
	if st.Reconnects > 0 {
		s.Reconnects = st.Reconnects - 1 // the first connection is no reconnection
	}
	return s
}

// sessionTimeout is the timeout granted to st's session; 0 before the
// first, when State.Timeout is still the one asked for.
func sessionTimeout(st session.State) time.Duration {
	if st.SessionID == 0 {
		return 0
	}
	return st.Timeout
}

// EventKind says what an [Event] counts.
type EventKind int

// The kinds of [Event]; each matches a counter of [Stats].
const (
	EventReconnect       EventKind = iota + 1 // Stats.Reconnects
	EventCompute                              // Stats.Computes; Event.Duration is the latest run's
	EventHandoffStarted                       // Stats.HandoffsStarted
	EventHandoffDone                          // Stats.HandoffsDone
	EventReleaseTimeout                       // Stats.ReleaseTimeouts
	EventStrategyError                        // Stats.StrategyErrors
	EventSessionLost                          // Stats.SessionsLost
	EventRevokedHandoff                       // Stats.RevokedHandoff
	EventRevokedShutdown                      // Stats.RevokedShutdown
	EventRevokedLost                          // Stats.RevokedLost
	EventRecordWrite                          // Stats.RecordWrites
	EventRecordConflict                       // Stats.RecordConflicts
)

var eventNames = [...]string{
	EventReconnect:       "reconnect",
	EventCompute:         "compute",
	EventHandoffStarted:  "handoff_started",
	EventHandoffDone:     "handoff_done",
	EventReleaseTimeout:  "release_timeout",
	EventStrategyError:   "strategy_error",
	EventSessionLost:     "session_lost",
	EventRevokedHandoff:  "revoked_handoff",
	EventRevokedShutdown: "revoked_shutdown",
	EventRevokedLost:     "revoked_lost",
	EventRecordWrite:     "record_write",
	EventRecordConflict:  "record_conflict",
}

// String returns a short snake_case name, fit for a metric or label:
// "reconnect", "compute", "handoff_started", "handoff_done",
// "release_timeout", "strategy_error", "session_lost", "revoked_handoff",
// "revoked_shutdown", "revoked_lost", "record_write", "record_conflict".
func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// Event is what [Config.Metrics] receives: Count more things of Kind
// happened since the previous Event of that Kind.
type Event struct {
	Kind  EventKind
	Count uint64 // at least 1
	// Duration is, for EventCompute, how long the latest run took.
	Duration time.Duration
}

// events returns the Events that take prev to next, in the order of the
// kinds.
func events(prev, next Stats) []Event {
	var out []Event
	add := func(k EventKind, before, after uint64, d time.Duration) {
		if after > before {
			out = append(out, Event{Kind: k, Count: after - before, Duration: d})
		}
	}
	add(EventReconnect, prev.Reconnects, next.Reconnects, 0)
	add(EventCompute, prev.Computes, next.Computes, next.LastCompute)
	add(EventHandoffStarted, prev.HandoffsStarted, next.HandoffsStarted, 0)
	add(EventHandoffDone, prev.HandoffsDone, next.HandoffsDone, 0)
	add(EventReleaseTimeout, prev.ReleaseTimeouts, next.ReleaseTimeouts, 0)
	add(EventStrategyError, prev.StrategyErrors, next.StrategyErrors, 0)
	add(EventSessionLost, prev.SessionsLost, next.SessionsLost, 0)
	add(EventRevokedHandoff, prev.RevokedHandoff, next.RevokedHandoff, 0)
	add(EventRevokedShutdown, prev.RevokedShutdown, next.RevokedShutdown, 0)
	add(EventRevokedLost, prev.RevokedLost, next.RevokedLost, 0)
	add(EventRecordWrite, prev.RecordWrites, next.RecordWrites, 0)
	add(EventRecordConflict, prev.RecordConflicts, next.RecordConflicts, 0)
	return out
}

// reportMetrics calls Config.Metrics with what changed in the stats, from
// this goroutine of its own, until stop is closed; then once more, so the
// last counts are reported before Close returns. The member loop only
// stores a snapshot and drops a token in a channel: a slow hook delays
// nothing but its own Events, which then come coalesced.
func (a *Allocator) reportMetrics(stop <-chan struct{}) {
	var prev Stats
	flush := func() {
		next := a.Stats()
		for _, ev := range events(prev, next) {
			a.cfg.Metrics(ev)
		}
		prev = next
	}
	for {
		select {
		case <-a.reb.StatsChanged():
			flush()
		case <-stop:
			flush()
			return
		}
	}
}
