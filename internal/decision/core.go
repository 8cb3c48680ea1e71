package decision

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures a [Core].
type Config struct {
	Member string
	// Strategy names the strategy, for reasons and logs; the core never
	// runs it (see [Job]).
	Strategy string
	// Settle is the quiet period that ends a burst of changes before the
	// assignment is computed; a burst is cut short settleFactor × Settle
	// after its first change. 0 computes at once.
	Settle time.Duration
	// ReleaseTimeout is how long a revoked partition waits for the
	// consumer's ack, from when the consumer received the Update that
	// revoked it, before its claim is released anyway; a revocation the
	// consumer does not receive waits undeliveredFactor × ReleaseTimeout
	// from its publication (see handoff).
	ReleaseTimeout time.Duration
	// DisconnectGrace is how long assigned partitions are kept after the
	// connection is lost, hoping it comes back; 0 revokes them at once.
	// However long, they are revoked when the session reports Lost, which
	// its lease does before the server can expire it.
	DisconnectGrace time.Duration
	// DepartureDelay keeps a departed member's seat, its share unclaimed
	// and everybody else's unchanged, for this long (see seats.go); 0
	// computes over the live members only.
	DepartureDelay time.Duration
	// Acks, if set, is where the consumer's acks of the Updates the core
	// publishes go (see [Update.Ack]); the loop around the core reads it
	// and calls [Core.Acked]. The core only hands it to its Updates.
	Acks *Acks
}

// Core makes this member's decisions: it collects the session state, the
// member and partition views and the claims held, asks for the target to
// be computed when the views settle, runs the hand-off, and says which
// Update to publish and which claims to hold.
//
// It is pure, after etcd raft's RawNode: no goroutines, no clock, no I/O.
// Events go in through its methods; time only through [Core.Tick], which
// every other event is taken at. What to do comes out of [Core.Ready].
// It is not safe for concurrent use.
//
// Hand-off: a partition is listed in Assigned only once this member holds
// its claim; a partition that moves away is listed in Revoked and its
// claim is kept until the consumer acks (or ReleaseTimeout passes after
// the consumer received the revocation; see handoff for one it never
// receives), and only then can the next owner claim it. Partitions that
// do not move are never interrupted.
//
// Session policy: when the connection is lost everything is revoked, at
// once or after DisconnectGrace, and always when the session reports Lost (before
// the server can expire it); once the session is up again nothing is
// assigned until member and partition views read after the reconnection
// have come, and the claims have been confirmed.
type Core struct {
	cfg Config
	now time.Time
	ho  *handoff

	st        session.State
	members   membership.View
	parts     partitions.View
	haveViews [2]bool // members, parts
	settle    debouncer
	job       Job       // the newest computation asked for
	jobOut    bool      // job is to be returned by Ready
	jobOpen   bool      // job has not been answered
	jobRun    bool      // job has started (StartJob said JobRun)
	jobAt     time.Time // when it was asked for, then when it started
	jobLate   bool      // its lateness was logged

	target         []rebalance.Partition // this member's share of the newest views; valid if haveTarget
	haveTarget     bool
	targetGen      int64
	targetOf       []string              // the members it was computed for
	targetParts    []rebalance.Partition // and the partitions
	targetLive     []string              // the live ones among targetOf (the others hold seats)
	targetWeights  []int                 // their weights
	targetDrained  []string              // the drained members it was computed with
	targetBalanced []string              // and the members running balanced
	seats          seats                 // departure timers (DepartureDelay)
	held           Held
	suspendedAt    time.Time // when the connection was lost; zero while up
	graceAt        time.Time // when the grace ends; zero if not running
	keep           bool      // the newest snapshot's partitions may be kept while the target or claims are re-established

	snap       Update    // the newest snapshot
	releaseAt  time.Time // when the next release timeout is due; zero if none
	seq        uint64    // the newest snapshot's; 0 before the first (see primed)
	desiredSeq uint64
	firstSeq   uint64                // the first Want of the current session epoch
	lastWant   []rebalance.Partition // the newest Want's Partitions, sorted
	judged     []rebalance.Partition // the newest Want the hand-off made knowing the claims held, sorted
	judgedIn   int64                 // the session it was made in
	wantSince  []uint64              // wantSince[i]: the Want.Seq since which lastWant[i] has been wanted

	closing    bool      // Close was called: everything is revoked
	closeAt    time.Time // when
	closeBy    time.Time // when the drain ends, acked or not (see handoff.drainBy)
	closeBound bound     // the bound that ends it then
	closeIn    int64     // the session at Close, whose claims the drain keeps; 0 if none
	closeLate  bool      // the drain ran out of time
	gaveUp     bool      // GiveUp ended the drain
	drainEnd   DrainEnd  // how the drain ended, once it has
	finalSeq   uint64    // the Seq of the Want that releases every claim once the consumer has acked the drain; 0 until asked
	releaseBy  time.Time // when the drain ends if the release has not finished: ReleaseTimeout after that Want

	vanished map[rebalance.Partition]uint64 // claims deleted from outside, their records not yet released (see vanished.go)

	ready Ready // what to do, gathered since the last Ready

	cause RevokeCause // the causes folded since the consumer's last delivery (see cause.go)

	// For Counters; the hand-off counts the rest.
	strategyErrors uint64
	revocations    revocations // partitions taken out of Assigned, by cause
	sessionsLost   uint64
	lostCounted    bool  // the newest loss was counted, and no session has come up since
	upIn           int64 // the session last up
}

// StrategyStall is how long a strategy may run before the core logs that
// it has not returned. Strategies run off the actor's loop, so a slow one
// delays only the new assignment: revocations, acks and Close go on.
const StrategyStall = 5 * time.Second

// Job asks for the strategy to be run on a view. The shell runs it (off
// the core) and answers with [Core.Computed]; an answer to a job that is
// no longer the newest is dropped.
type Job struct {
	ID         uint64
	Members    []string              // sorted; includes this member
	Live       []string              // the live members, sorted; Members adds the seats
	Partitions []rebalance.Partition // sorted
	Gen        int64
	session    int64
	connects   uint64
	// The zxids of the member view and the partition view it was made
	// from (see [Core.StartJob]): the sticky record is computed for
	// them.
	MembersZxid, PartitionsZxid int64
	// Weights, parallel to Live, are the live members' weights (nil:
	// every weight 1); Drained the drained members, sorted (the member
	// view's).
	Weights []int
	Drained []string
	// Balanced are the live members that run the balanced strategy (the
	// member view's): while there is one, a sticky member computes
	// Balanced's assignment, which they compute (a rolling upgrade).
	Balanced []string
}

// Weight returns member's weight in j: its entry of Weights if it is
// live, else 0 (a seat's weight is not in the view).
func (j Job) Weight(member string) int {
	i, found := slices.BinarySearch(j.Live, member)
	switch {
	case !found:
		return 0
	case i < len(j.Weights):
		return j.Weights[i]
	}
	return 1
}

// Ready is what the core wants done, gathered since the previous call to
// [Core.Ready].
type Ready struct {
	// Publish is the newest Update to deliver to the consumer, if any:
	// it replaces any not yet delivered.
	Publish *Update
	// Want is the newest set of claims to hold, if it changed.
	Want *Want
	// Compute is a computation to run, if one is due.
	Compute *Job
	// Wake is when [Core.Tick] is next due; zero if nothing is.
	Wake time.Time
	// Logs are what happened worth telling, in order.
	Logs []Log
	// Expire is the seats whose DepartureDelay has run out, to delete;
	// nil unless one is new since the last.
	Expire []membership.Seat
}

// Log is one record for the shell's logger.
type Log struct {
	Level slog.Level
	Msg   string
	Args  []any
}

// NewCore returns a core at time now.
func NewCore(cfg Config, now time.Time) *Core {
	return &Core{
		cfg:    cfg,
		now:    now,
		ho:     newHandoff(cfg.ReleaseTimeout),
		settle: debouncer{settle: cfg.Settle},
	}
}

// Ready returns what to do and clears it.
func (c *Core) Ready() Ready {
	r := c.ready
	c.ready = Ready{}
	if c.jobOut {
		j := c.job
		r.Compute, c.jobOut = &j, false
	}
	r.Wake = c.wake()
	return r
}

// Current returns the newest published snapshot and whether there is one.
func (c *Core) Current() (Update, bool) { return c.snap, c.primed() }

// primed reports whether the first assignment has been published.
func (c *Core) primed() bool { return c.seq != 0 }

// Tick moves the core's time to now and acts on what is due. Every other
// event is taken at the time of the last Tick.
func (c *Core) Tick(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	c.step()
}

// SessionChanged takes a new session state.
func (c *Core) SessionChanged(st session.State) {
	prev := c.st
	c.st = st
	c.countLoss(st)
	switch st.Status {
	case session.Up:
		c.suspendedAt, c.graceAt = time.Time{}, time.Time{}
		if prev.SessionID != 0 && st.SessionID != prev.SessionID {
			c.keep = false // a new session: the old one's claims are gone
		}
		if st.SessionID != prev.SessionID {
			c.vanished = nil // the old session's records ended with it
		}
		if st.SessionID != prev.SessionID || st.Reconnects != prev.Reconnects {
			c.haveTarget = false // wait for views read after the reconnection
			c.firstSeq = 0
			c.settle.change(c.now)
		}
		c.reconcile("session up")
	case session.Suspended:
		if c.suspendedAt.IsZero() {
			c.suspendedAt = c.now
			if c.cfg.DisconnectGrace > 0 {
				c.graceAt = c.now.Add(c.cfg.DisconnectGrace)
			}
		}
		c.reconcile("connection to ZooKeeper lost")
	default: // Lost, Closed, Connecting
		c.graceAt = time.Time{}
		c.haveTarget = false
		c.keep = false
		c.reconcile("ZooKeeper session " + st.Status.String())
	}
	c.step()
}

// MembersRead takes a member view.
func (c *Core) MembersRead(v membership.View) {
	if c.haveViews[0] && c.members.Equal(v) {
		return
	}
	c.members, c.haveViews[0] = v, true
	c.seatsSeen()
	c.settle.change(c.now)
	c.step()
}

// PartitionsRead takes a partition view.
func (c *Core) PartitionsRead(v partitions.View) {
	if c.haveViews[1] && c.parts.Equal(v) {
		return
	}
	c.parts, c.haveViews[1] = v, true
	if len(v.Corrupt) > 0 {
		c.log(slog.LevelWarn, "zkalloc: partition set has corrupt topics; their partitions are not assigned", "corrupt", len(v.Corrupt), "first", v.Corrupt[0].Error())
	}
	c.settle.change(c.now)
	c.step()
}

// ClaimsHeld takes the claims actor's report of the claims held.
func (c *Core) ClaimsHeld(h Held) {
	c.held = h
	c.noteVanished(h)
	c.reconcile("claims changed")
	c.step()
}

// Acked takes the consumer's ack of Update seq (and so of every earlier
// one).
func (c *Core) Acked(seq uint64) {
	if c.ho.ack(seq) {
		c.reconcile("consumer acked")
	}
	c.drainBy()
	c.step()
}

// Delivered takes that the consumer received u, a published Update.
func (c *Core) Delivered(u Update) {
	if u.seq == c.seq {
		c.cause = RevokeNone // what a later Update revokes, it revokes anew
	}
	if c.ho.delivered(u.seq, u.Assigned, c.now) {
		c.reconcile("consumer received a revocation")
	}
	c.drainBy()
	c.step()
}

// Computed takes the answer to job: this member's share of the view, or
// the strategy's error.
func (c *Core) Computed(job Job, mine []rebalance.Partition, err error) {
	if job.ID == c.job.ID {
		c.jobOpen = false
	}
	if job.ID != c.job.ID || c.closing || !c.fresh() || job.session != c.st.SessionID || job.connects != c.st.Reconnects {
		return // a newer job or a new connection has overtaken it
	}
	if err != nil {
		c.strategyErrors++
		c.log(slog.LevelError, "zkalloc: strategy failed; keeping the previous assignment", "strategy", c.cfg.Strategy, "err", err)
		if c.primed() {
			c.publish(c.snap.Assigned, c.snap.tokens, c.snap.Pending, c.snap.Generation, c.snap.Members,
				fmt.Sprintf("strategy failed, keeping the previous assignment: %v", err), every(RevokeHandoff))
		}
		c.step()
		return
	}
	c.target, c.targetGen, c.targetOf, c.targetParts, c.haveTarget = mine, job.Gen, job.Members, job.Partitions, true
	c.targetLive, c.targetWeights, c.targetDrained, c.targetBalanced = job.Live, job.Weights, job.Drained, job.Balanced
	c.log(slog.LevelDebug, "zkalloc: target computed", "generation", job.Gen, "target", len(mine))
	c.reconcile(fmt.Sprintf("%s over %d members and %d partitions", c.cfg.Strategy, len(job.Members), len(job.Partitions)))
	c.step()
}

// step acts on what is due at c.now: a settled burst of changes, a
// release timeout, the end of the grace period.
func (c *Core) step() {
	if c.closing {
		c.stepDrain()
		return
	}
	if c.settle.ready(c.now) {
		c.settle.done()
		c.compute()
	}
	c.seatsDue()
	if c.jobOpen && c.jobRun && !c.jobLate && !c.now.Before(c.jobAt.Add(StrategyStall)) {
		c.jobLate = true
		c.log(slog.LevelWarn, "zkalloc: strategy has not returned; keeping the previous assignment meanwhile", "strategy", c.cfg.Strategy, "after", c.now.Sub(c.jobAt), "members", len(c.job.Members), "partitions", len(c.job.Partitions))
	}
	if !c.releaseAt.IsZero() && !c.now.Before(c.releaseAt) {
		c.releaseAt = time.Time{}
		c.reconcile("release timeout")
	}
	if !c.graceAt.IsZero() && !c.now.Before(c.graceAt) {
		c.graceAt = time.Time{}
		c.reconcile("connection still lost after the grace period")
	}
}

// wake returns when the next timer is due; zero if none.
func (c *Core) wake() time.Time {
	if c.closing {
		switch {
		case c.Drained():
			return time.Time{}
		case c.finalSeq != 0:
			return c.releaseBy
		}
		return c.closeBy
	}
	var at time.Time
	var late time.Time
	if c.jobOpen && c.jobRun && !c.jobLate {
		late = c.jobAt.Add(StrategyStall)
	}
	for _, t := range []time.Time{c.releaseAt, c.graceAt, late, c.seatWake()} {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if t, ok := c.settle.due(); ok && (at.IsZero() || t.Before(at)) {
		at = t
	}
	return at
}

func (c *Core) log(level slog.Level, msg string, args ...any) {
	c.ready.Logs = append(c.ready.Logs, Log{Level: level, Msg: msg, Args: args})
}

// fresh reports whether both views were read in the current session after
// its latest reconnection.
func (c *Core) fresh() bool {
	return c.st.Status == session.Up && c.haveViews[0] && c.haveViews[1] &&
		c.members.SessionID == c.st.SessionID && c.members.Reconnects >= c.st.Reconnects &&
		c.parts.SessionID == c.st.SessionID && c.parts.Reconnects >= c.st.Reconnects
}

// compute asks for the target of the current views, unless it is known.
func (c *Core) compute() {
	if c.closing || !c.fresh() {
		return
	}
	live := c.members.Members
	if _, found := slices.BinarySearch(live, c.cfg.Member); !found {
		return // not registered (yet) in this session: nothing is ours
	}
	members := c.seated()
	gen := max(c.members.Zxid, c.parts.Zxid)
	// Equal generations mean equal views only for views that held when
	// their job started (see StartJob), and a backend without Outdated
	// checks (in-memory) gives no such proof: compare the contents too.
	if c.haveTarget && gen == c.targetGen && slices.Equal(c.targetOf, members) && slices.Equal(c.targetLive, live) && slices.Equal(c.targetParts, c.parts.Partitions) &&
		slices.Equal(c.targetWeights, c.members.Weights) && slices.Equal(c.targetDrained, c.members.Drained) &&
		slices.Equal(c.targetBalanced, c.members.Balanced) {
		return
	}
	c.job = Job{ID: c.job.ID + 1, Members: members, Live: live, Partitions: c.parts.Partitions, Gen: gen, session: c.st.SessionID, connects: c.st.Reconnects,
		MembersZxid: c.members.Zxid, PartitionsZxid: c.parts.Zxid, Weights: c.members.Weights, Drained: c.members.Drained, Balanced: c.members.Balanced}
	c.jobOut, c.jobOpen, c.jobRun, c.jobAt, c.jobLate = true, true, false, c.now, false
}

// keeping reports whether the newest snapshot's partitions stay with the
// consumer while the target or the claims are being re-established: its
// claims are still the session's, and the session is up, or the
// connection is lost but the grace period has not run out.
func (c *Core) keeping() bool {
	if !c.keep {
		return false
	}
	switch c.st.Status {
	case session.Up:
		return true
	case session.Suspended:
		return c.cfg.DisconnectGrace > 0 && c.now.Sub(c.suspendedAt) < c.cfg.DisconnectGrace
	}
	return false
}

// reconcile derives the assignment from the target and the claims held,
// publishes it if it changed, and says what claims to hold.
//
// Until the claims actor has reported for the current connection, which
// claims are held is unknown. If it reported earlier in the same session
// (before a reconnection), claims may still be held and in use by the
// consumer: the hand-off is then left as it is, and the claims actor is
// asked for the target and what the hand-off last asked for knowing the
// claims, so that none is given up before the hand-off can judge it on
// the report. (Not the last Want: with several views before the
// report, that would add up every target in between.) Before the first
// report of a session nothing is assigned, and the hand-off judges alone.
func (c *Core) reconcile(reason string) {
	if c.closing {
		return // everything is revoked; the claims stay until drained
	}
	up := c.st.Status == session.Up
	held := c.heldNow()
	var assigned, pending []rebalance.Partition
	var tokens []int64
	kept := false
	why := every(RevokeLost)
	switch {
	case up && c.haveTarget && held != nil:
		assigned = intersect(c.target, held)
		tokens = c.tokensOf(assigned)
		pending, _ = diff(assigned, c.target)
		c.keep = true
		why = func(p rebalance.Partition) RevokeCause {
			if _, targeted := slices.BinarySearchFunc(c.target, p, rebalance.Compare); targeted {
				return c.notHeld(p)
			}
			return RevokeHandoff
		}
	case c.keeping():
		assigned, tokens, pending = c.kept(held) // a short blip: keep working
		kept = true
		why = c.notHeld
	default:
		c.keep = false // the connection, the lease or the session is lost
	}
	if c.primed() || up && c.haveTarget && held != nil && c.firstSeq != 0 && c.held.Seq >= c.firstSeq {
		// Kept partitions keep the generation they were assigned in: a
		// newer view may give some of them to another member already.
		gen, members := c.snap.Generation, c.snap.Members
		if up && c.haveTarget && !kept {
			gen, members = c.targetGen, c.targetLive
		}
		if !c.primed() || gen != c.snap.Generation || !slices.Equal(members, c.snap.Members) ||
			!slices.Equal(assigned, c.snap.Assigned) || !slices.Equal(pending, c.snap.Pending) ||
			!slices.Equal(tokens, c.snap.tokens) {
			c.publish(assigned, tokens, pending, gen, members, reason, why)
		}
	}
	if !up || !c.haveTarget {
		c.releaseAt = time.Time{}
		return
	}
	var want []rebalance.Partition
	target := c.wantable()
	if held == nil && c.judgedIn == c.st.SessionID {
		added, _ := diff(c.judged, target)
		want = append(slices.Clone(c.judged), added...)
		rebalance.Sort(want)
		c.releaseAt = time.Time{} // due again from the hand-off once the claims are known
	} else {
		var forced []forcedRelease
		want, forced, c.releaseAt = c.ho.want(target, c.withVanished(held), c.snap.Assigned, c.now)
		if held != nil {
			c.judged, c.judgedIn = want, c.st.SessionID
		}
		c.logForced(forced)
	}
	if c.firstSeq == 0 || !slices.Equal(want, c.lastWant) {
		c.desiredSeq++
		if c.firstSeq == 0 {
			c.firstSeq = c.desiredSeq
		}
		c.wantSince = wantedSince(c.lastWant, c.wantSince, want, c.desiredSeq)
		c.lastWant = want
		c.log(slog.LevelDebug, "zkalloc: claims wanted", "want", len(want), "seq", c.desiredSeq)
		c.ready.Want = &Want{SessionID: c.st.SessionID, Reconnects: c.st.Reconnects, Seq: c.desiredSeq, Partitions: want}
	}
	c.dropVanished()
}

// kept returns what the newest snapshot assigned that may be kept through
// a blip, with its tokens, and what it left pending. Once the claims
// actor has reported for the current connection (held is not nil), only
// the claims it still holds are kept: one it names held by another
// session, or vanished, or not at all, is revoked at once and goes back
// to Pending, whether the connection was lost or not.
func (c *Core) kept(held []rebalance.Partition) (assigned []rebalance.Partition, tokens []int64, pending []rebalance.Partition) {
	if held == nil {
		return c.snap.Assigned, c.snap.tokens, c.snap.Pending
	}
	assigned = intersect(c.snap.Assigned, held)
	if len(assigned) == len(c.snap.Assigned) {
		return c.snap.Assigned, c.snap.tokens, c.snap.Pending
	}
	lost, _ := diff(assigned, c.snap.Assigned)
	pending = append(slices.Clone(c.snap.Pending), lost...)
	rebalance.Sort(pending)
	return assigned, c.tokensOf(assigned), pending
}

// logForced logs, at ERROR, the revoked partitions released without an
// ack: one record for each bound, naming the partitions (the first
// maxNamed of them), how many, and the longest any waited.
func (c *Core) logForced(forced []forcedRelease) {
	for _, b := range []bound{afterDelivery, undelivered} {
		var ps []rebalance.Partition
		var after time.Duration
		for _, f := range forced {
			if f.bound == b {
				ps = append(ps, f.p)
				after = max(after, f.after)
			}
		}
		if len(ps) == 0 {
			continue
		}
		msg := "zkalloc: consumer did not ack a revocation within ReleaseTimeout of receiving it; releasing the partitions anyway, and another member may start them while this consumer still works on them"
		if b == undelivered {
			msg = "zkalloc: consumer did not receive a revocation; releasing the partitions anyway, and another member may start them while this consumer still works on them"
		}
		c.log(slog.LevelError, msg, "partitions", named(ps), "count", len(ps), "bound", b.String(), "after", after, "releaseTimeout", c.cfg.ReleaseTimeout)
	}
}

// maxNamed is how many partitions a log record names.
const maxNamed = 10

// named returns the first maxNamed of ps, comma-separated, and how many
// more there are.
func named(ps []rebalance.Partition) string {
	var b strings.Builder
	for i, p := range ps {
		if i == maxNamed {
			fmt.Fprintf(&b, " and %d more", len(ps)-maxNamed)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// heldCurrent reports whether the claims actor's last report is of the
// current connection.
func (c *Core) heldCurrent() bool {
	return c.held.SessionID == c.st.SessionID && c.held.Reconnects == c.st.Reconnects
}

// heldNow returns the claims held in the current session epoch, or nil if
// the claims actor has not reported for it yet.
//
// A report can be overtaken by a Want sent after it: a claim it lists
// may have been given up since, on this core's own request, and taken by
// another member. So a claim counts only while it is still wanted and the
// report answers a Want at least as new as the one since which it has
// been wanted without a break.
func (c *Core) heldNow() []rebalance.Partition {
	if !c.heldCurrent() {
		return nil
	}
	held := make([]rebalance.Partition, 0, len(c.held.Partitions))
	i := 0 // both lists are sorted: walk them together
	for _, p := range c.held.Partitions {
		for i < len(c.lastWant) && rebalance.Compare(c.lastWant[i], p) < 0 {
			i++
		}
		if i < len(c.lastWant) && rebalance.Compare(c.lastWant[i], p) == 0 && c.held.Seq >= c.wantSince[i] {
			held = append(held, p)
		}
	}
	return held
}

// wantedSince returns, for each partition of want (sorted), the Want.Seq
// since which it has been wanted without a break: its entry in since
// (parallel to prev, the previous Want) if it was wanted before, seq if
// it is new.
func wantedSince(prev []rebalance.Partition, since []uint64, want []rebalance.Partition, seq uint64) []uint64 {
	out := make([]uint64, len(want))
	i := 0
	for j, p := range want {
		for i < len(prev) && rebalance.Compare(prev[i], p) < 0 {
			i++
		}
		if i < len(prev) && rebalance.Compare(prev[i], p) == 0 {
			out[j] = since[i]
		} else {
			out[j] = seq
		}
	}
	return out
}

// publish makes a snapshot assigning assigned, relative to what the
// consumer last received, with pending still to come; why says why each
// partition it takes out of the newest snapshot's Assigned is revoked.
func (c *Core) publish(assigned []rebalance.Partition, tokens []int64, pending []rebalance.Partition, gen int64, members []string, reason string, why func(rebalance.Partition) RevokeCause) {
	c.seq++
	c.revoked(assigned, why)
	added, revoked := diff(c.ho.cur, assigned) // relative to what the consumer last received
	cause := RevokeNone
	if len(revoked) > 0 {
		cause = c.cause
	}
	u := Update{
		Generation: gen,
		Members:    members,
		Assigned:   assigned,
		Added:      added,
		Revoked:    revoked,
		Cause:      cause,
		Pending:    pending,
		Reason:     reason,
		seq:        c.seq,
		acks:       c.cfg.Acks,
		tokens:     tokens,
	}
	c.snap = u
	c.ho.published(assigned, c.now)
	c.ready.Publish = &u
}
