package zkalloc

import (
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Partition names one partition of one topic: Topic, its topic's name, and
// ID, the partition's number in it. It is [rebalance.Partition]: that
// package has its [rebalance.Compare] order (by topic, then numerically
// by ID), [rebalance.Parse] and String ("topic:id").
type Partition = rebalance.Partition

// Update is one snapshot of this member's assignment, as its consumer
// receives it from [Allocator.Updates]: the generation it was computed
// for, the live members, what is Assigned, Added, Revoked and Pending,
// and why; Ack hands the revoked partitions on, and Token gives a
// partition's fencing token. It is a value: nothing in it changes after
// it is published, and its slices must not be modified. It is defined
// with the member's decisions, which make it, and its fields and methods
// are documented there: go doc
// github.com/zkalloc/zkalloc/internal/decision Update.
type Update = decision.Update

// RevokeCause says why an [Update]'s Revoked was revoked (Update.Cause):
// [RevokeHandoff] and [RevokeShutdown] keep every other member off the
// partitions until the consumer acks (bounded), [RevokeLost] does not:
// another member may own them already. When an Update folds several
// causes, the most severe wins: lost over shutdown over hand-off. It is
// defined with Update: go doc github.com/zkalloc/zkalloc/internal/decision
// RevokeCause.
type RevokeCause = decision.RevokeCause

// The causes of a revocation, in order of severity.
const (
	// RevokeNone: nothing was revoked.
	RevokeNone = decision.RevokeNone
	// RevokeHandoff: the assignment moved the partitions (or they left
	// the shared set); this member keeps their claims until the Ack, or
	// ReleaseTimeout after the consumer received the Update. A claim
	// deleted from outside whose hold record still stands is revoked as
	// a hand-off too.
	RevokeHandoff = decision.RevokeHandoff
	// RevokeShutdown: Close, Shutdown or a fatal error revokes everything;
	// the claims are kept until the Ack for as long as the shutdown waits.
	RevokeShutdown = decision.RevokeShutdown
	// RevokeLost: the connection, the lease or the session was lost (or a
	// claim and its hold record were deleted from outside): another
	// member may own the partitions already; stop them at once.
	RevokeLost = decision.RevokeLost
)
