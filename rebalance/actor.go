package rebalance

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures an [Actor]. Member, Strategy and the inputs and
// outputs are required.
type Config struct {
	Member   string
	Strategy Strategy
	// Settle is the quiet period that ends a burst of changes before the
	// assignment is computed; a burst is cut short settleFactor × Settle
	// after its first change. 0 computes at once.
	Settle time.Duration
	// ReleaseTimeout is how long a revoked partition waits for the
	// consumer's ack before its claim is released anyway.
	ReleaseTimeout time.Duration
	// Grace is how long assigned partitions are kept after the connection
	// is lost, hoping it comes back; 0 revokes them at once. However long,
	// they are revoked when the session reports Lost, which its lease does
	// before the server can expire it.
	Grace time.Duration

	Session *actor.Latest[session.State]
	Members <-chan membership.View
	Parts   <-chan partitions.View
	// Desired goes to the claims actor; Held comes from it.
	Desired *actor.Latest[claims.Desired]
	Held    *actor.Latest[claims.Held]

	Logger *slog.Logger
	Clock  actor.Clock
}

// Actor collects the session state, the member and partition views and
// the claims held, computes this member's target whenever the views
// settle, runs the hand-off and publishes [Update]s. Create it with [New].
//
// Hand-off: a partition is listed in Assigned only once this member holds
// its claim; a partition that moves away is listed in Revoked and its claim
// is kept until the consumer acks (or ReleaseTimeout passes), and only then
// can the next owner claim it. Partitions that do not move are never
// interrupted.
//
// Session policy: when the connection is lost the actor revokes
// everything, at once or after Grace, and always before the session can
// expire on the server; once the session is up again it waits for member
// and partition views read after the reconnection and for its claims to be
// confirmed before assigning anything.
type Actor struct {
	cfg     Config
	out     *actor.Outbox[Update]
	ready   chan struct{} // closed when the first assignment is published
	current atomic.Pointer[Update]
	acks    *acks
	ho      *handoff

	// Owned by Run.
	st        session.State
	members   membership.View
	parts     partitions.View
	haveViews [2]bool // members, parts
	settle    debouncer

	target      []Partition // this member's share of the newest views; valid if haveTarget
	haveTarget  bool
	targetGen   int64
	targetOf    []string    // the members it was computed for
	targetParts []Partition // and the partitions
	held        claims.Held
	suspendedAt time.Time // when the connection was lost; zero while up
	keep        bool      // the newest snapshot's partitions may be kept while the target or claims are re-established

	snap       Update    // the newest snapshot
	releaseAt  time.Time // when the next release timeout is due; zero if none
	seq        uint64
	desiredSeq uint64
	firstSeq   uint64      // the first Desired of the current session epoch
	lastWant   []Partition // the newest Desired's Want, sorted
	judged     []Partition // the newest Want the hand-off made knowing the claims held, sorted
	judgedIn   int64       // the session it was made in
	wantSince  []uint64    // wantSince[i]: the Desired.Seq since which lastWant[i] has been wanted
	primed     bool        // the first assignment has been published
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
		acks:   newAcks(),
		ho:     newHandoff(cfg.ReleaseTimeout),
		settle: debouncer{settle: cfg.Settle},
	}
}

// Updates delivers this member's assignment, latest-wins: a slow reader
// receives the newest snapshot, whose Added and Revoked cover everything
// since the last one it received, and never blocks the actor. It is closed
// when Run returns.
func (a *Actor) Updates() <-chan Update { return a.out.C() }

// Ready is closed once the first assignment has been published on
// [Actor.Updates].
func (a *Actor) Ready() <-chan struct{} { return a.ready }

// Current returns the newest published snapshot, whether or not it has
// been received from Updates, and false before the first one. It is safe
// for concurrent use.
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
	settleTimer := actor.StoppedTimer(a.cfg.Clock)
	defer settleTimer.Stop()
	releaseTimer := actor.StoppedTimer(a.cfg.Clock)
	defer releaseTimer.Stop()
	graceTimer := actor.StoppedTimer(a.cfg.Clock)
	defer graceTimer.Stop()
	var settleAt, releaseAt time.Time // when the timers are due; zero if not running
	members, parts := a.cfg.Members, a.cfg.Parts
	for {
		now := a.cfg.Clock.Now()
		if a.settle.ready(now) {
			a.settle.done()
			a.compute()
		}
		if at, ok := a.settle.due(); ok && !at.Equal(settleAt) {
			settleTimer.Reset(at.Sub(now))
			settleAt = at
		}
		if next := a.releaseAt; !next.Equal(releaseAt) {
			if next.IsZero() {
				releaseTimer.Stop() // nothing is due any more
			} else {
				releaseTimer.Reset(next.Sub(now))
			}
			releaseAt = next
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.cfg.Session.Changed():
			if st, ok := a.cfg.Session.Take(); ok {
				a.onSession(st, graceTimer)
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
		case <-a.cfg.Held.Changed():
			if h, ok := a.cfg.Held.Take(); ok {
				a.held = h
				a.reconcile("claims changed")
			}
		case <-a.acks.wake:
			if a.ho.ack(a.acks.highest.Load()) {
				a.reconcile("consumer acked")
			}
		case <-settleTimer.C():
			settleAt = time.Time{}
		case <-releaseTimer.C():
			releaseAt = time.Time{}
			a.reconcile("release timeout")
		case <-graceTimer.C():
			a.reconcile("connection still lost after the grace period")
		case a.out.Send() <- a.out.Pending():
			u := a.out.Pending()
			a.out.Sent()
			if a.ho.delivered(u.seq, u.Assigned) {
				a.reconcile("consumer acked")
			}
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

func (a *Actor) onSession(st session.State, graceTimer actor.Timer) {
	prev := a.st
	a.st = st
	switch st.Status {
	case session.Up:
		a.suspendedAt = time.Time{}
		graceTimer.Stop()
		if prev.SessionID != 0 && st.SessionID != prev.SessionID {
			a.keep = false // a new session: the old one's claims are gone
		}
		if st.SessionID != prev.SessionID || st.Reconnects != prev.Reconnects {
			a.haveTarget = false // wait for views read after the reconnection
			a.firstSeq = 0
			a.changed()
		}
		a.reconcile("session up")
	case session.Suspended:
		if a.suspendedAt.IsZero() {
			a.suspendedAt = a.cfg.Clock.Now()
			if a.cfg.Grace > 0 {
				graceTimer.Reset(a.cfg.Grace)
			}
		}
		a.reconcile("connection to ZooKeeper lost")
	default: // Lost, Closed, Connecting
		a.haveTarget = false
		a.keep = false
		a.reconcile("ZooKeeper session " + st.Status.String())
	}
}

// fresh reports whether both views were read in the current session after
// its latest reconnection.
func (a *Actor) fresh() bool {
	return a.st.Status == session.Up && a.haveViews[0] && a.haveViews[1] &&
		a.members.SessionID == a.st.SessionID && a.members.Reconnects >= a.st.Reconnects &&
		a.parts.SessionID == a.st.SessionID && a.parts.Reconnects >= a.st.Reconnects
}

// compute runs the strategy on the current views and updates the target.
func (a *Actor) compute() {
	if !a.fresh() {
		return
	}
	members := a.members.Members
	if _, found := slices.BinarySearch(members, a.cfg.Member); !found {
		return // not registered (yet) in this session: nothing is ours
	}
	gen := max(a.members.Zxid, a.parts.Zxid)
	// One write can change several znodes at one zxid, and a view may hold
	// some of them before its watches have delivered the rest: equal
	// generations do not prove equal views, so compare the contents.
	if a.haveTarget && gen == a.targetGen && slices.Equal(a.targetOf, members) && slices.Equal(a.targetParts, a.parts.Parts) {
		return // the target already answers these views
	}
	result, err := Compute(a.cfg.Strategy, members, a.parts.Parts)
	if err != nil {
		a.cfg.Logger.Error("zkalloc: strategy failed; keeping the previous assignment", "strategy", a.cfg.Strategy.Name(), "err", err)
		if a.primed {
			a.publish(a.snap.Assigned, a.snap.Pending, a.snap.Generation, a.snap.Members,
				fmt.Sprintf("strategy failed, keeping the previous assignment: %v", err))
		}
		return
	}
	a.target, a.targetGen, a.targetOf, a.targetParts, a.haveTarget = result[a.cfg.Member], gen, members, a.parts.Parts, true
	a.cfg.Logger.Debug("zkalloc: target computed", "generation", gen, "target", len(a.target))
	a.reconcile(fmt.Sprintf("%s over %d members and %d partitions", a.cfg.Strategy.Name(), len(members), len(a.parts.Parts)))
}

// keeping reports whether the newest snapshot's partitions stay with the
// consumer while the target or the claims are being re-established: its
// claims are still the session's, and the session is up, or the
// connection is lost but the grace period has not run out.
func (a *Actor) keeping() bool {
	if !a.keep {
		return false
	}
	switch a.st.Status {
	case session.Up:
		return true
	case session.Suspended:
		return a.cfg.Grace > 0 && a.cfg.Clock.Now().Sub(a.suspendedAt) < a.cfg.Grace
	}
	return false
}

// reconcile derives the assignment from the target and the claims held,
// publishes it if it changed, and tells the claims actor what to hold.
//
// Until the claims actor has reported for the current connection, which
// claims are held is unknown. If it reported earlier in the same session
// (before a reconnection), claims may still be held and in use by the
// consumer: the hand-off is then left as it is, and the claims actor is
// asked for the target and what the hand-off last asked for knowing the
// claims, so that none is given up before the hand-off can judge it on
// the report. (Not the last Desired: with several views before the
// report, that would add up every target in between.) Before the first
// report of a session nothing is assigned, and the hand-off judges alone.
func (a *Actor) reconcile(reason string) {
	up := a.st.Status == session.Up
	held := a.heldNow()
	var assigned, pending []Partition
	kept := false
	switch {
	case up && a.haveTarget && held != nil:
		assigned = intersect(a.target, held)
		pending, _ = diff(assigned, a.target)
		a.keep = true
	case a.keeping():
		assigned, pending = a.snap.Assigned, a.snap.Pending // a short blip: keep working
		kept = true
	default:
		a.keep = false
	}
	if a.primed || up && a.haveTarget && held != nil && a.firstSeq != 0 && a.held.Seq >= a.firstSeq {
		// Kept partitions keep the generation they were assigned in: a
		// newer view may give some of them to another member already.
		gen, members := a.snap.Generation, a.snap.Members
		if up && a.haveTarget && !kept {
			gen, members = a.targetGen, a.targetOf
		}
		if !a.primed || gen != a.snap.Generation || !slices.Equal(members, a.snap.Members) ||
			!slices.Equal(assigned, a.snap.Assigned) || !slices.Equal(pending, a.snap.Pending) {
			a.publish(assigned, pending, gen, members, reason)
		}
	}
	if !up || !a.haveTarget {
		a.releaseAt = time.Time{}
		return
	}
	var want []Partition
	if held == nil && a.judgedIn == a.st.SessionID {
		added, _ := diff(a.judged, a.target)
		want = append(slices.Clone(a.judged), added...)
		partitions.Sort(want)
		a.releaseAt = time.Time{} // due again from the hand-off once the claims are known
	} else {
		var timedOut []Partition
		want, timedOut, a.releaseAt = a.ho.want(a.target, held, a.snap.Assigned, a.cfg.Clock.Now())
		if held != nil {
			a.judged, a.judgedIn = want, a.st.SessionID
		}
		for _, p := range timedOut {
			a.cfg.Logger.Warn("zkalloc: consumer did not ack a revocation within ReleaseTimeout; releasing the partition anyway", "partition", p.String(), "timeout", a.cfg.ReleaseTimeout)
		}
	}
	if a.firstSeq == 0 || !slices.Equal(want, a.lastWant) {
		a.desiredSeq++
		if a.firstSeq == 0 {
			a.firstSeq = a.desiredSeq
		}
		a.wantSince = wantedSince(a.lastWant, a.wantSince, want, a.desiredSeq)
		a.lastWant = want
		a.cfg.Logger.Debug("zkalloc: claims wanted", "want", len(want), "seq", a.desiredSeq)
		a.cfg.Desired.Set(claims.Desired{SessionID: a.st.SessionID, Reconnects: a.st.Reconnects, Seq: a.desiredSeq, Want: want})
	}
}

// heldNow returns the claims held in the current session epoch, or nil if
// the claims actor has not reported for it yet.
//
// A report can be overtaken by a Desired sent after it: a claim it lists
// may have been given up since, on this actor's own request, and taken by
// another member. So a claim counts only while it is still wanted and the
// report answers a Desired at least as new as the one since which it has
// been wanted without a break.
func (a *Actor) heldNow() []Partition {
	if a.held.SessionID != a.st.SessionID || a.held.Reconnects != a.st.Reconnects {
		return nil
	}
	held := make([]Partition, 0, len(a.held.Held))
	i := 0 // both lists are sorted: walk them together
	for _, p := range a.held.Held {
		for i < len(a.lastWant) && partitions.Compare(a.lastWant[i], p) < 0 {
			i++
		}
		if i < len(a.lastWant) && partitions.Compare(a.lastWant[i], p) == 0 && a.held.Seq >= a.wantSince[i] {
			held = append(held, p)
		}
	}
	return held
}

// wantedSince returns, for each partition of want (sorted), the Desired.Seq
// since which it has been wanted without a break: its entry in since
// (parallel to prev, the previous Want) if it was wanted before, seq if
// it is new.
func wantedSince(prev []Partition, since []uint64, want []Partition, seq uint64) []uint64 {
	out := make([]uint64, len(want))
	i := 0
	for j, p := range want {
		for i < len(prev) && partitions.Compare(prev[i], p) < 0 {
			i++
		}
		if i < len(prev) && partitions.Compare(prev[i], p) == 0 {
			out[j] = since[i]
		} else {
			out[j] = seq
		}
	}
	return out
}

// publish puts a snapshot assigning assigned, relative to what the
// consumer last received, with pending still to come.
func (a *Actor) publish(assigned, pending []Partition, gen int64, members []string, reason string) {
	a.seq++
	added, revoked := diff(a.ho.cur, assigned) // relative to what the consumer last received
	u := Update{
		Generation: gen,
		Members:    members,
		Assigned:   assigned,
		Added:      added,
		Revoked:    revoked,
		Pending:    pending,
		Reason:     reason,
		seq:        a.seq,
		acks:       a.acks,
	}
	a.snap = u
	a.out.Put(u)
	a.current.Store(&u)
	if !a.primed {
		a.primed = true
		close(a.ready)
	}
}
