package decision

import (
	"slices"
	"sync/atomic"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Update is one snapshot of this member's assignment, as its consumer
// receives it from zkalloc's Allocator.Updates (it is zkalloc.Update).
// It is a value: nothing in it changes after it is published, and its
// slices must not be modified.
type Update struct {
	// Generation identifies the views the assignment was computed from:
	// the zxid of the newest change to the member list (with its seats)
	// or to the shared partition set that they contain. Members that
	// report the same generation computed from the same member list,
	// seats and partition set: the group as it was at that zxid. Each
	// view is exact at its zxid (a change written at one zxid, such as
	// one AddPartitions of several topics, is in it whole or not at
	// all), and the strategy runs only on a pair of views that both still
	// hold when it starts, so a member never pairs an old member list
	// with a newer set (or the reverse). Partitions kept through a blip
	// (Config.DisconnectGrace) keep the generation they were assigned in
	// until the claims are checked, even if a newer view has arrived; a
	// strategy that fails keeps the previous assignment and its
	// generation.
	Generation int64
	// Members of the group, sorted: the live ones. With
	// Config.DepartureDelay, a member that has left but whose seat is
	// kept is not listed, though the assignment is computed with it (its
	// share is paused).
	Members []string
	// Assigned is every partition this member owns now, sorted by
	// [rebalance.Compare]. No other member lists any of them in its own
	// Assigned at the same time.
	Assigned []rebalance.Partition
	// Added and Revoked are the partitions that Assigned gained and lost
	// since the previous Update the consumer received, sorted. Skipped
	// (conflated) updates lose nothing: their changes are folded in.
	Added   []rebalance.Partition
	Revoked []rebalance.Partition
	// Cause says why Revoked was revoked; [RevokeNone] when Revoked is
	// empty. On [RevokeHandoff] and [RevokeShutdown] this member keeps
	// every other member off the partitions until the consumer acks this
	// Update (bounded by ReleaseTimeout, and for a shutdown by how long
	// it waits); on [RevokeLost] it may no longer: another member may
	// own them already. When Revoked folds revocations of several causes
	// (conflated Updates, or partitions revoked at once for different
	// reasons), Cause is the most severe: lost over shutdown over
	// hand-off.
	Cause RevokeCause
	// Pending is every partition the assignment gives this member that it
	// cannot list in Assigned yet, sorted: its previous owner has not
	// released it (it waits for its own consumer's Ack, or its session to
	// end) or the claim is being created. Empty once the hand-off is
	// complete; a group has converged when every member's is.
	Pending []rebalance.Partition
	// Reason says why this update was published, for logs.
	Reason string

	seq    uint64
	acks   *Acks   // where Ack reports; nil in the zero Update
	tokens []int64 // tokens[i] is Assigned[i]'s fencing token
}

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
func (u Update) Token(p rebalance.Partition) (int64, bool) {
	i, found := slices.BinarySearchFunc(u.Assigned, p, rebalance.Compare)
	if !found || i >= len(u.tokens) || u.tokens[i] == 0 {
		return 0, false
	}
	return u.tokens[i], true
}

// Ack tells the allocator that the consumer has stopped every partition
// in Revoked (and in the Revoked of every earlier Update), so their
// claims can go to their next owners. Until then, or until
// Config.ReleaseTimeout, those partitions stay with this member. Ack never
// blocks, is idempotent and cheap: call it on every Update, after
// stopping Revoked and before or after starting Added. Acking an Update
// also acks every earlier one. It does nothing on the zero Update.
func (u Update) Ack() {
	if u.acks != nil {
		u.acks.ack(u.seq)
	}
}

// Acks carries the consumer's acks to the loop around the [Core] without
// blocking the consumer: the highest acked Update and a wake-up. Every
// Update the core publishes reports to the Acks of its [Config]. Safe
// for concurrent use.
type Acks struct {
	highest atomic.Uint64
	wake    chan struct{}
}

// NewAcks returns an Acks with nothing acked.
func NewAcks() *Acks {
	// One slot: an ack records "look again" without blocking, and a
	// pending wake-up is never lost.
	return &Acks{wake: make(chan struct{}, 1)}
}

// Wake receives after an ack of a newer Update than any before; then
// read [Acks.Highest] and give it to [Core.Acked].
func (a *Acks) Wake() <-chan struct{} { return a.wake }

// Highest is the sequence number of the newest Update acked (acking an
// Update acks every earlier one); 0 before any.
func (a *Acks) Highest() uint64 { return a.highest.Load() }

// Acked reports whether u has been acked, by its own Ack or a later
// Update's.
func (a *Acks) Acked(u Update) bool { return a.highest.Load() >= u.seq }

func (a *Acks) ack(seq uint64) {
	for {
		cur := a.highest.Load()
		if seq <= cur {
			return
		}
		if a.highest.CompareAndSwap(cur, seq) {
			break
		}
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// diff returns what next adds to and removes from prev; both sorted and
// distinct.
func diff(prev, next []rebalance.Partition) (added, removed []rebalance.Partition) {
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		switch {
		case j == len(next):
			removed = append(removed, prev[i])
			i++
		case i == len(prev):
			added = append(added, next[j])
			j++
		default:
			switch c := rebalance.Compare(prev[i], next[j]); {
			case c < 0:
				removed = append(removed, prev[i])
				i++
			case c > 0:
				added = append(added, next[j])
				j++
			default:
				i, j = i+1, j+1
			}
		}
	}
	return added, removed
}
