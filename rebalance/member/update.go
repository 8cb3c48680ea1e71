package member

import (
	"slices"
	"sync/atomic"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Partition is [rebalance.Partition], named here for brevity.
type Partition = rebalance.Partition

// Update is one snapshot of this member's assignment. The root package's
// Update wraps it for the consumer and documents the fields, which mean
// the same here. It is a value: nothing in it changes after it is
// published, and its slices must not be modified.
type Update struct {
	Generation int64
	Members    []string // sorted; the live members
	Assigned   []Partition
	Added      []Partition
	Revoked    []Partition
	Pending    []Partition
	Reason     string

	seq    uint64
	acks   *acks
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
func (u Update) Token(p Partition) (int64, bool) {
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

// acks carries consumer acks to the member actor without blocking the
// consumer: the highest acked sequence number and a wake-up.
type acks struct {
	highest atomic.Uint64
	wake    chan struct{}
}

func newAcks() *acks {
	// One slot: an ack records "look again" without blocking, and a
	// pending wake-up is never lost.
	return &acks{wake: make(chan struct{}, 1)}
}

func (a *acks) ack(seq uint64) {
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
func diff(prev, next []Partition) (added, removed []Partition) {
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
