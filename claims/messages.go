package claims

import (
	"sync"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// The member actor and the claims actor talk through two snapshots,
// each delivered latest-wins: the member actor says which claims it
// wants ([Desired]), the claims actor answers which it holds ([Held]).
// Both are full states, so a skipped one loses nothing. The member actor
// also asks, rarely, for the holders of stuck claims to be looked up and
// logged ([Stuck], through a [StuckBox]).

// Desired is the set of ownership claims the member actor wants held
// in one session: the partitions it is assigned plus those its consumer
// may still be working on. Claims held outside it are released.
type Desired struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                // grows with every Desired, echoed by Held
	Want       []rebalance.Partition // sorted
}

// Held is the set of claims the claims actor holds, verified to belong to
// the session it names.
type Held struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                // the Desired.Seq this answers
	Held       []rebalance.Partition // sorted
	// Tokens[i] is the creation zxid of Held[i]'s claim node: the
	// partition's fencing token while this session keeps the claim.
	Tokens []int64
	// Vanished is every claim of this session found deleted from outside
	// (by an operator or a script) while its hold record still names this
	// session, sorted. Nobody else can take such a partition until this
	// session releases the record or ends, but the member must stop using
	// it at once: it is not in Held, and the member revokes it. Its
	// record is released once the partition is no longer wanted, and only
	// then can it be claimed again (by this member too).
	Vanished []rebalance.Partition
	// Blocked is every wanted claim found held by another session, with
	// that session, in no order. It stands while attempts fail: a claim
	// that cannot be looked at again keeps its last known holder.
	Blocked []Blocked
}

// Blocked is a wanted claim held by another session.
type Blocked struct {
	Partition rebalance.Partition
	Session   int64 // the claim's ephemeral owner
}

// Stuck asks the claims actor to look up who holds Parts, the wanted
// claims that Session has held for HeldFor, longer than a hand-off can
// take, and to log it. The member's core decides when (see
// member.Core); the claims actor only reads the holder's nodes.
type Stuck struct {
	Session int64
	Parts   []rebalance.Partition // sorted
	HeldFor time.Duration
}

// StuckBox carries [Stuck] reports from the member actor to the claims
// actor. Put never blocks and drops nothing, unlike a latest-wins cell:
// each report is an event, logged once. Reports are few (at most one per
// holding session each time claims get stuck), and the claims actor takes
// them all at once, so the box stays small. Safe for concurrent use.
type StuckBox struct {
	mu      sync.Mutex
	pending []Stuck
	wake    chan struct{}
}

// NewStuckBox returns an empty box.
func NewStuckBox() *StuckBox {
	// One slot: Put records "there is something" without blocking.
	return &StuckBox{wake: make(chan struct{}, 1)}
}

// Put adds reports and wakes the reader.
func (b *StuckBox) Put(s ...Stuck) {
	if len(s) == 0 {
		return
	}
	b.mu.Lock()
	b.pending = append(b.pending, s...)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Changed receives after Put; then call Take.
func (b *StuckBox) Changed() <-chan struct{} { return b.wake }

// Take returns every report not yet taken, oldest first.
func (b *StuckBox) Take() []Stuck {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.pending
	b.pending = nil
	return s
}
