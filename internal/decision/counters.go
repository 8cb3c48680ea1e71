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
