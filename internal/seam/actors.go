package seam

import (
	"context"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Actors are the four actors an Allocator runs around its member loop,
// as it uses them: the ZooKeeper ones (internal/zksession, members,
// partset and claims) or a [Backend]'s. Every field but Observer is
// required.
type Actors struct {
	Session    Session
	Members    Members
	Partitions Partitions
	Claims     Claims
	// Assigner runs the sticky strategy's jobs over the group's agreed
	// record; nil when the strategy is stateless (the shell runs it).
	Assigner Assigner
	// Observer, if not nil, is told what the member loop publishes and
	// what its consumer receives and acks.
	Observer Observer
}

// Session is the session actor. Run runs until ctx ends, publishing the
// session's states, and publishes a Closed state before it returns; the
// Allocator cancels it only once the member loop has drained, so that
// the claims, which go with the session, outlive the drain.
type Session interface {
	actor.Actor
	// Observe returns a latest-wins cell of the session's states for the
	// member loop; the Allocator calls it once, before Run.
	Observe() *actor.Latest[session.State]
	// Failure reports whether a session is up and, if none is, the last
	// error met reaching the servers (nil if none), for Start's error
	// when its context ends first. Safe for concurrent use.
	Failure() (up bool, err error)
}

// Members is the members actor: it registers this member in every
// session and publishes the member list. Its Run returns an error
// wrapping [membership.ErrDuplicateMember] when another live session
// holds the name (the ZooKeeper actor only once it has registered: before,
// it waits for that session to end), which stops the Allocator.
type Members interface {
	actor.Actor
	// Views delivers the member lists, latest-wins; closed when Run
	// returns. A view's Changed may be nil: the member loop then takes
	// it as holding (see [membership.View.Outdated]).
	Views() <-chan membership.View
	// Expire asks for the given seats (DepartureDelay) to be deleted,
	// each only at the version given; it replaces the previous request
	// and never blocks.
	Expire(seats []membership.Seat)
}

// Partitions is the set actor: it merges the seed in the first session
// and publishes the shared set.
type Partitions interface {
	actor.Actor
	// Views delivers the set, latest-wins; closed when Run returns. A
	// view's Changed may be nil, as for Members.
	Views() <-chan partitions.View
	// Add and Remove change the shared set and return once it has
	// changed, waiting for a session if there is none, until ctx ends.
	// Their topics are checked by [partitions.Normalize] (an error
	// wrapping rebalance.ErrInvalid). Once Run has returned they return
	// [actor.ErrClosed]. Safe for concurrent use.
	Add(ctx context.Context, topics map[string][]int32) error
	Remove(ctx context.Context, topics map[string][]int32) error
}

// Claims is the claims actor: it holds the claims the member loop wants
// and reports those it holds. The claims go with the session, not with
// Run: they are kept after Run returns until the session ends.
type Claims interface {
	actor.Actor
	// Want is where the member loop sets the claims it wants.
	Want() *actor.Latest[decision.Want]
	// Held is where the actor reports the claims it holds.
	Held() *actor.Latest[decision.Held]
}

// Assigner computes this member's share of a job over the group's agreed
// assignment record (the sticky strategy): it returns once a record
// computed for exactly the job's views (its MembersZxid and
// PartitionsZxid) is in place, written by this member or another, with
// this member's partitions in it; or ctx's error once ctx ends (the
// shell ends it when a newer job is due). It is called by one goroutine
// at a time. RecordCounts says how many records this member wrote, and
// how many it computed but lost to another member's write (Stats's
// RecordWrites and RecordConflicts); it is safe for concurrent use.
type Assigner interface {
	Assign(ctx context.Context, job decision.Job) ([]rebalance.Partition, error)
	RecordCounts() (writes, conflicts uint64)
}

// Observer follows a member loop and its consumer, for a test group
// that waits on them. It is called on the loop's goroutine, and must not
// block.
type Observer interface {
	// Published is told of every Update the loop publishes, before
	// anyone can receive it.
	Published(u decision.Update)
	// Received is told of every Update the consumer receives from
	// Updates; acked says whether it was acked already (taken from
	// Current).
	Received(u decision.Update, acked bool)
	// Acked is told when the consumer acks the newest Update it
	// received.
	Acked()
}
