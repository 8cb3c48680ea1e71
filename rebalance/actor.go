package rebalance

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures an [Actor]. Member, Strategy and the three inputs are
// required.
type Config struct {
	Member   string
	Strategy Strategy
	// Settle is the quiet period that ends a burst of changes before the
	// assignment is computed; a burst is cut short settleFactor × Settle
	// after its first change. 0 computes at once.
	Settle time.Duration

	Session *actor.Latest[session.State]
	Members <-chan membership.View
	Parts   <-chan partitions.View

	Logger *slog.Logger
	Clock  actor.Clock
}

// Actor collects the session state and the member and partition views,
// computes this member's share whenever they settle, and publishes
// [Update]s. Create it with [New].
//
// Session policy: when the connection is lost the actor at once publishes
// an Update that revokes everything, since the session may expire and
// others take over; once the session is up again it waits for member and
// partition views read after the reconnection before assigning anything.
type Actor struct {
	cfg     Config
	out     *actor.Outbox[Update]
	ready   chan struct{} // closed when the first assignment is published
	current atomic.Pointer[Update]

	// Owned by Run.
	st          session.State
	members     membership.View
	parts       partitions.View
	haveViews   [2]bool // members, parts
	settle      debouncer
	assigned    []partitions.Partition // what the newest snapshot assigns
	delivered   []partitions.Partition // Assigned of the last Update the consumer received
	gen         int64
	lastMembers []string // Members of the newest snapshot
	computed    bool     // the newest snapshot is the strategy's result for gen and lastMembers
	published   bool     // an assignment has been computed
}

// New returns a rebalance actor; it starts nothing.
func New(cfg Config) *Actor {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	return &Actor{
		cfg:    cfg,
		out:    actor.NewOutbox[Update](),
		ready:  make(chan struct{}),
		settle: debouncer{settle: cfg.Settle},
	}
}

// Updates delivers this member's assignment, latest-wins: a slow reader
// receives the newest snapshot, whose Added and Revoked cover everything
// since the last one it received, and never blocks the actor. It is closed
// when Run returns.
func (a *Actor) Updates() <-chan Update { return a.out.C() }

// Ready is closed once the first assignment has been computed and is
// available on [Actor.Updates].
func (a *Actor) Ready() <-chan struct{} { return a.ready }

// Current returns the newest computed snapshot, whether or not it has been
// received from Updates, and false before the first one. It is safe for
// concurrent use.
func (a *Actor) Current() (Update, bool) {
	u := a.current.Load()
	if u == nil {
		return Update{}, false
	}
	return *u, true
}

// Run publishes updates until ctx is cancelled; it returns nil then.
func (a *Actor) Run(ctx context.Context) error {
	defer a.out.Close()
	timer := actor.StoppedTimer(a.cfg.Clock)
	defer timer.Stop()
	var armed time.Time // when timer fires; zero if it is not running
	members, parts := a.cfg.Members, a.cfg.Parts
	for {
		now := a.cfg.Clock.Now()
		if a.settle.ready(now) {
			a.settle.done()
			a.compute()
		}
		if at, ok := a.settle.due(); ok && !at.Equal(armed) {
			timer.Reset(at.Sub(now))
			armed = at
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.cfg.Session.Changed():
			if st, ok := a.cfg.Session.Take(); ok {
				a.onSession(st)
			}
		case v, ok := <-members:
			if !ok {
				members = nil
				break
			}
			if a.haveViews[0] && sameMembers(a.members, v) {
				break
			}
			a.members, a.haveViews[0] = v, true
			a.changed()
		case v, ok := <-parts:
			if !ok {
				parts = nil
				break
			}
			if a.haveViews[1] && sameParts(a.parts, v) {
				break
			}
			a.parts, a.haveViews[1] = v, true
			if len(v.Corrupt) > 0 {
				a.cfg.Logger.Warn("zkalloc: partition set has corrupt topics; their partitions are not assigned", "corrupt", len(v.Corrupt), "first", v.Corrupt[0].Error())
			}
			a.changed()
		case <-timer.C():
			armed = time.Time{}
		case a.out.Send() <- a.out.Pending():
			a.delivered = a.out.Pending().Assigned
			a.out.Sent()
		}
	}
}

func sameMembers(a, b membership.View) bool {
	return a.Zxid == b.Zxid && a.SessionID == b.SessionID && a.Reconnects == b.Reconnects && slices.Equal(a.Members, b.Members)
}

func sameParts(a, b partitions.View) bool {
	return a.Zxid == b.Zxid && a.SessionID == b.SessionID && a.Reconnects == b.Reconnects &&
		len(a.Corrupt) == len(b.Corrupt) && slices.Equal(a.Parts, b.Parts)
}

func (a *Actor) changed() { a.settle.change(a.cfg.Clock.Now()) }

func (a *Actor) onSession(st session.State) {
	a.st = st
	switch st.Status {
	case session.Suspended, session.Lost:
		if a.published && len(a.assigned) > 0 {
			a.settle.done()
			a.computed = false
			a.assign(nil, a.gen, "connection to ZooKeeper "+st.Status.String()+": stopping all partitions before the session can expire")
		}
	case session.Up:
		a.changed() // views read before this may be stale; compute once fresh ones arrive
	}
}

// fresh reports whether both views were read in the current session after
// its latest reconnection.
func (a *Actor) fresh() bool {
	return a.st.Status == session.Up && a.haveViews[0] && a.haveViews[1] &&
		a.members.SessionID == a.st.SessionID && a.members.Reconnects >= a.st.Reconnects &&
		a.parts.SessionID == a.st.SessionID && a.parts.Reconnects >= a.st.Reconnects
}

// compute runs the strategy on the current views and publishes this
// member's share.
func (a *Actor) compute() {
	if !a.fresh() {
		return
	}
	members := a.members.Members
	if _, found := slices.BinarySearch(members, a.cfg.Member); !found {
		return // not registered (yet) in this session: nothing is ours
	}
	gen := max(a.members.Zxid, a.parts.Zxid)
	if a.computed && gen == a.gen && slices.Equal(a.lastMembers, members) {
		return // the newest snapshot is the strategy's answer to these views
	}
	result, err := Compute(a.cfg.Strategy, members, a.parts.Parts)
	if err != nil {
		a.cfg.Logger.Error("zkalloc: strategy failed; keeping the previous assignment", "strategy", a.cfg.Strategy.Name(), "err", err)
		a.assign(a.assigned, a.gen, fmt.Sprintf("strategy failed, keeping the previous assignment: %v", err))
		return
	}
	a.computed = true
	a.assign(result[a.cfg.Member], gen, fmt.Sprintf("%s over %d members and %d partitions", a.cfg.Strategy.Name(), len(members), len(a.parts.Parts)))
}

// assign publishes a snapshot assigning mine, relative to what the
// consumer last received.
func (a *Actor) assign(mine []partitions.Partition, gen int64, reason string) {
	added, revoked := diff(a.delivered, mine)
	u := Update{
		Generation: gen,
		Members:    a.members.Members,
		Assigned:   mine,
		Added:      added,
		Revoked:    revoked,
		Reason:     reason,
	}
	a.assigned, a.gen, a.lastMembers = mine, gen, u.Members
	a.out.Put(u)
	a.current.Store(&u)
	if !a.published && a.st.Status == session.Up {
		a.published = true
		close(a.ready)
	}
}
