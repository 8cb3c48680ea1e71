package member

import (
	"time"

	"github.com/zkalloc/zkalloc/session"
)

// Counters counts the core's decisions since it was created.
type Counters struct {
	// HandoffsStarted counts partitions revoked from the consumer while
	// this member held their claims: each must be stopped (acked) before
	// the next owner can take it.
	HandoffsStarted uint64
	// HandoffsDone counts those whose claims were then given up, acked or
	// not. (A partition assigned back before its claim was given up ends
	// its hand-off without counting here.)
	HandoffsDone uint64
	// ReleaseTimeouts counts revoked partitions released without the
	// consumer's ack: ReleaseTimeout after the consumer received the
	// revocation, or undeliveredFactor × ReleaseTimeout after its
	// publication if it never did.
	ReleaseTimeouts uint64
	// StrategyErrors counts strategy runs that failed.
	StrategyErrors uint64
}

// Counters returns what the core has counted.
func (c *Core) Counters() Counters {
	return Counters{
		HandoffsStarted: c.ho.started,
		HandoffsDone:    c.ho.done,
		ReleaseTimeouts: c.ho.timeouts,
		StrategyErrors:  c.strategyErrors,
	}
}

// Stats is a snapshot of a member actor, for the allocator's Stats.
type Stats struct {
	Session    session.Status
	SessionID  int64
	Reconnects uint64 // times the connection came up again after the first
	Generation int64
	Members    int
	Assigned   int
	Pending    int
	// Computes counts strategy runs that returned; LastCompute is how long
	// the latest took.
	Computes    uint64
	LastCompute time.Duration
	Counters
}

// stats returns the core's part of a Stats.
func (c *Core) stats() Stats {
	s := Stats{
		Session:    c.st.Status,
		SessionID:  c.st.SessionID,
		Generation: c.snap.Generation,
		Members:    len(c.snap.Members),
		Assigned:   len(c.snap.Assigned),
		Pending:    len(c.snap.Pending),
		Counters:   c.Counters(),
	}
	if c.st.Reconnects > 0 {
		s.Reconnects = c.st.Reconnects - 1
	}
	return s
}
