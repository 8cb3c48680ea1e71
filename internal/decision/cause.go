package decision

import (
	"fmt"

	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// RevokeCause says why the partitions of an [Update]'s Revoked were
// taken away, after franz-go's OnPartitionsRevoked and OnPartitionsLost:
// whether this member still keeps every other member off them until its
// consumer acks (a hand-off, a shutdown), or may already have lost them
// (a lost session or claim). The constants are ordered by severity: when
// an Update folds several revocations (conflated Updates, or one Update
// revoking for two reasons at once), its Cause is the most severe of
// theirs, [RevokeLost] over [RevokeShutdown] over [RevokeHandoff].
type RevokeCause int

const (
	// RevokeNone: Revoked is empty.
	RevokeNone RevokeCause = iota
	// RevokeHandoff: the assignment moved the partitions to other
	// members (or took them out of the shared set). This member keeps
	// their claims until the consumer acks the Update, or ReleaseTimeout
	// after it received it: stop them, commit, and Ack. A claim deleted
	// from outside while its hold record still keeps the others off it
	// (see [Held].Vanished) is revoked as a hand-off too: the member
	// claims it again once the consumer has acked.
	RevokeHandoff
	// RevokeShutdown: the allocator is stopping, by Close, Shutdown or a
	// fatal error, and revokes everything. The claims are kept until the
	// consumer acks, as for a hand-off, but only as long as the shutdown
	// waits (Shutdown's context, ReleaseTimeout for Close).
	RevokeShutdown
	// RevokeLost: the member may no longer hold the partitions' claims:
	// the connection to ZooKeeper was lost (at once, or after
	// DisconnectGrace), the session's lease ran out, the session expired
	// or was replaced, or a claim and its hold record were deleted from
	// outside. Another member may own them already, or soon will, without
	// waiting for the Ack: stop them at once, and do not count on
	// committing their work (the fencing token tells a sink which write
	// is stale).
	RevokeLost
)

// String returns "none", "handoff", "shutdown" or "lost".
func (c RevokeCause) String() string {
	switch c {
	case RevokeNone:
		return "none"
	case RevokeHandoff:
		return "handoff"
	case RevokeShutdown:
		return "shutdown"
	case RevokeLost:
		return "lost"
	}
	return fmt.Sprintf("RevokeCause(%d)", int(c))
}

// revocations counts partitions taken out of Assigned, by cause.
type revocations [RevokeLost + 1]uint64

// revoked records why the partitions that a snapshot assigning assigned
// takes out of the newest one's Assigned are revoked, each as why says:
// it counts them, and folds their causes into the Cause of the next
// Update the consumer receives.
func (c *Core) revoked(assigned []rebalance.Partition, why func(rebalance.Partition) RevokeCause) {
	for _, p := range minus(c.snap.Assigned, assigned) {
		pc := why(p)
		c.revocations[pc]++
		c.cause = max(c.cause, pc)
	}
}

// every returns a why for revoked that gives every partition cause.
func every(cause RevokeCause) func(rebalance.Partition) RevokeCause {
	return func(rebalance.Partition) RevokeCause { return cause }
}

// lostOr returns cause while the session is up or suspended (it may
// resume, the claims with it), and RevokeLost otherwise.
func (c *Core) lostOr(cause RevokeCause) RevokeCause {
	switch c.st.Status {
	case session.Up, session.Suspended:
		return cause
	}
	return RevokeLost
}

// notHeld returns the cause of revoking p, assigned and still targeted,
// because its claim is no longer held: a hand-off if its hold record
// still keeps the others off it (vanished), lost if not.
func (c *Core) notHeld(p rebalance.Partition) RevokeCause {
	if _, ok := c.vanished[p]; ok {
		return RevokeHandoff
	}
	return RevokeLost
}

// countLoss counts, in SessionsLost, a session that has been lost: it
// went Lost (its lease ran out, it expired or was replaced), counted once
// until it is up again, or it came up as another session while the loss
// of the old one was never reported (the loop takes the newest state
// only).
func (c *Core) countLoss(st session.State) {
	switch st.Status {
	case session.Lost:
		if !c.lostCounted {
			c.sessionsLost++
			c.lostCounted = true
		}
	case session.Up:
		if !c.lostCounted && c.upIn != 0 && st.SessionID != c.upIn {
			c.sessionsLost++
		}
		c.lostCounted = false
		c.upIn = st.SessionID
	}
}
