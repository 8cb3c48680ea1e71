// The stopgap below hands zkalloctest the root's member loop; it goes in
// the next commit, once zkalloctest drives the real Allocator.

package seam

import (
	"context"
	"log/slog"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// MemberConfig configures a [Member]: the fields of zkalloc.Config the
// member's decisions use, the inputs that the session, membership,
// partitions and claims actors would give it, and observers of its
// consumer. Every field but Logger and the observers is required.
type MemberConfig struct {
	Member                                  string
	Strategy                                rebalance.Strategy
	Settle, ReleaseTimeout, DisconnectGrace time.Duration

	Session    *actor.Latest[session.State]
	Members    <-chan membership.View
	Partitions <-chan partitions.View
	// Want goes to the claims actor; Held comes from it.
	Want *actor.Latest[decision.Want]
	Held *actor.Latest[decision.Held]

	Logger *slog.Logger

	// The observers, if set, are told on the member's goroutine of each
	// Update it publishes, of each its consumer receives (acked says
	// whether it was acked already, taken from Current), and of the ack
	// of the newest one received. They must not block.
	Published func(decision.Update)
	Received  func(u decision.Update, acked bool)
	Acked     func()
}

// Member is the allocator's member loop, as zkalloc's Allocator runs it.
type Member interface {
	// Run publishes Updates until ctx is cancelled, then drains, as
	// zkalloc's Close does; it closes Updates when it returns.
	Run(ctx context.Context) error
	// Updates, Current and Ready are the Allocator's Updates and
	// Current, and a channel closed once the first Update is published.
	Updates() <-chan decision.Update
	Current() (decision.Update, bool)
	Ready() <-chan struct{}
}

// NewMember returns a member loop that starts nothing; package zkalloc
// sets it.
var NewMember func(MemberConfig) Member
