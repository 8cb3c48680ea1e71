package zkalloc

import (
	"github.com/zkalloc/zkalloc/internal/hook"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/rebalance/member"
)

// Partition names one partition of one topic: Topic, its topic's name, and
// ID, the partition's number in it. It is [rebalance.Partition]: that
// package has its [rebalance.Compare] order (by topic, then numerically
// by ID), [rebalance.Parse] and String ("topic:id").
type Partition = rebalance.Partition

// Update is one snapshot of this member's assignment, as its consumer
// receives it from [Allocator.Updates]. It is a value: nothing in it
// changes after it is published, and its slices must not be modified.
type Update struct {
	// Generation identifies the view the assignment was computed from: the
	// zxid of the newest change it contains. Members that computed from the
	// same view report the same generation. Partitions kept through a blip
	// (Config.DisconnectGrace) keep the generation they were assigned in
	// until the claims are checked, even if a newer view has arrived.
	Generation int64
	// Members of the group, sorted: the live ones. With
	// Config.DepartureDelay, a member that has left but whose seat is
	// kept is not listed, though the assignment is computed with it (its
	// share is paused).
	Members []string
	// Assigned is every partition this member owns now, sorted by
	// [rebalance.Compare]. No other member lists any of them in its own
	// Assigned at the same time.
	Assigned []Partition
	// Added and Revoked are the partitions that Assigned gained and lost
	// since the previous Update the consumer received, sorted. Skipped
	// (conflated) updates lose nothing: their changes are folded in.
	Added   []Partition
	Revoked []Partition
	// Pending is every partition the assignment gives this member that it
	// cannot list in Assigned yet, sorted: its previous owner has not
	// released it (it waits for its own consumer's Ack, or its session to
	// end) or the claim is being created. Empty once the hand-off is
	// complete; a group has converged when every member's is.
	Pending []Partition
	// Reason says why this update was published, for logs.
	Reason string

	m member.Update // for Ack and Token
}

// Ack tells the allocator that the consumer has stopped every partition
// in Revoked (and in the Revoked of every earlier Update), so their
// claims can go to their next owners. Until then, or until
// Config.ReleaseTimeout, those partitions stay with this member. Ack never
// blocks, is idempotent and cheap: call it on every Update, after
// stopping Revoked and before or after starting Added. Acking an Update
// also acks every earlier one. It does nothing on the zero Update.
func (u Update) Ack() { u.m.Ack() }

// Token returns p's fencing token, and false if p is not in Assigned.
//
// The token stays the same for as long as this member owns p without
// interruption, and is larger than the token of any earlier owner of p:
// it is the creation zxid of p's claim node, which ZooKeeper makes grow
// with every write. Pass it with every write to the sink a partition's
// work goes to, and have the sink refuse a write whose token is lower than
// the highest it has seen for p: a former owner that has not stopped yet
// (a consumer slow to see its revocation, or a process paused through its
// session's expiry) can then no longer overwrite its successor's work.
//
// If p's claim node is deleted from outside (by an operator) while this
// member still owns p, the member revokes p as soon as it notices (within
// about a session timeout), keeps every other member off it until the
// consumer has stopped it, and then claims it again: p is added again in
// a later Update, with the new claim's larger token. Take the token from
// the newest Update.
func (u Update) Token(p Partition) (int64, bool) { return u.m.Token(p) }

// newUpdate makes the consumer's Update of the member actor's.
func newUpdate(m member.Update) Update {
	return Update{
		Generation: m.Generation,
		Members:    m.Members,
		Assigned:   m.Assigned,
		Added:      m.Added,
		Revoked:    m.Revoked,
		Pending:    m.Pending,
		Reason:     m.Reason,
		m:          m,
	}
}

func init() { hook.NewUpdate = newUpdate }
