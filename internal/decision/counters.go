package decision

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
	// SessionsLost counts the sessions lost: each time the session went
	// Lost (its lease ran out, it expired or was replaced), once until a
	// session is up again, or came up as a new session when the old one's
	// loss was not seen.
	SessionsLost uint64
	// RevokedHandoff, RevokedShutdown and RevokedLost count partitions
	// taken out of Assigned, by their [RevokeCause] (each partition by its
	// own, not folded as an Update's Cause is). They count the snapshots
	// published, whether the consumer received each or not.
	RevokedHandoff  uint64
	RevokedShutdown uint64
	RevokedLost     uint64
}

// Counters returns what the core has counted.
func (c *Core) Counters() Counters {
	return Counters{
		HandoffsStarted: c.ho.started,
		HandoffsDone:    c.ho.done,
		ReleaseTimeouts: c.ho.timeouts,
		StrategyErrors:  c.strategyErrors,
		SessionsLost:    c.sessionsLost,
		RevokedHandoff:  c.revocations[RevokeHandoff],
		RevokedShutdown: c.revocations[RevokeShutdown],
		RevokedLost:     c.revocations[RevokeLost],
	}
}
