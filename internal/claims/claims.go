package claims

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zkwatch"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures an [Actor]. Every field is required but Strategy,
// CheckEvery, Settle and ReleaseTimeout (whose zero values mean what
// they say): the allocator sets them all (its New), and [New] panics,
// naming the field, if one is missing. There are no defaults here.
type Config struct {
	Paths   zkpath.Group
	Member  string
	Session *actor.Latest[zksession.State]
	Logger  *slog.Logger
	Clock   actor.Clock
	// ACL is given to the nodes the actor creates.
	ACL []zk.ACL

	// Settle and ReleaseTimeout are the member's (see [decision.Config]):
	// with the session timeout the server granted, they bound how long a
	// hand-off between members that agree takes. A wanted claim that
	// another session holds for longer is stuck: the actor warns of it
	// (see stuck.go).
	Settle         time.Duration
	ReleaseTimeout time.Duration
	// Strategy is the name of this member's strategy, to compare with a
	// stuck claim's holder's in the warning.
	Strategy string
	// CheckEvery is how often the claims held are checked for one deleted
	// from outside (see [Actor]); 0 means the session timeout the server
	// granted, a negative value never (for tests that count requests).
	CheckEvery time.Duration
}

// Actor is the actor that holds this member's ownership claims, the
// ephemeral nodes <root>/groups/<group>/owners/<topic>:<id>, in line with
// the latest [decision.Want] set, and reports what it holds as [decision.Held]. Beside
// each claim stands its hold record, the persistent node
// <root>/groups/<group>/holds/<topic>:<id> naming the holding session: a
// partition is taken (claim and record created in one multi-operation)
// only once its holder has released it (both deleted in one) or the
// holder's session has ended, whoever deletes its claim (see holds.go).
//
// A claim counts as held only if its node's ephemeral owner is the current
// session. A claim or record left by one of this actor's earlier sessions
// is replaced; one held by another session is waited out with a watch,
// never polled and never given up on, for as long as it is wanted. A
// create whose outcome is unknown (the connection dropped, or the client
// moved on to a new session before the reply) is checked by reading the
// node, not assumed, and released if it is no longer wanted. A release
// never deletes a node that is not the current session's: it reads the
// claim first, or, releasing many, proves from the owners node that the
// claims are still ours (see claims_proof.go).
//
// Claims taken or given up together are created, and deleted after their
// reads, a hundred to a multi-operation (see claimBatch), so that a member
// given 100,000 partitions claims them in about a second rather than ten.
// A batch that fails as a whole, because one of its partitions is held by
// another session, has each of them watched (see acquireAll); every
// watch that has fired by the next attempt is taken before it, so that
// claims released in a batch are claimed again in one. A crashed member's
// partitions are taken over in batches too, each of its records read once
// and its member node once for them all.
//
// Nobody else should touch the claims, but an operator or a script may
// delete one. Its hold record keeps the partition from every other member,
// but this member must stop using it at once: every CheckEvery (a session
// timeout) the actor reads the owners node's Stat, one request, whose
// Cversion counts every claim created or deleted in the group. If it
// changed since the last look, every claim held is checked as after a
// reconnection: one found gone while its record names this session has
// vanished, and is reported in [decision.Held.Vanished], not Held, so that the
// member revokes it; it is not created again while wanted, and its record
// is released once it is not. One found gone with its record, or held by
// another session, is dropped from Held too (and, if still wanted, claimed
// again or waited for). A claim deleted from outside is so noticed within
// about a session timeout, plus the time to check the claims held
// (pipelined reads, about a second at 100,000). The alternatives cost more
// at 100,000 partitions: a watch on each claim held is a request each when
// it is created (where the creates take one request for a hundred) and a
// SetWatches of every path on each reconnection; a children watch on the
// owners node would read every claim of the group, over a megabyte, on
// every change anywhere in it. The price here is a full check after every
// change of the group's claims, at most once a session timeout, and none
// while nothing changes.
//
// The actor times each wanted claim it waits for, held by another
// session; one held for longer than a hand-off can take is stuck, and
// the actor warns of it once for each holding session, with who holds it
// (see stuck.go and logStuck).
type Actor struct {
	cfg Config
	in  *actor.Latest[decision.Want]
	out *actor.Latest[decision.Held]

	// Owned by Run.
	loop       *ioloop.Loop       // the session state and the retries
	sessions   map[int64]struct{} // every session this actor has had
	desired    decision.Want
	ours       map[rebalance.Partition]int64    // claims held by session st.SessionID: their creation zxid, the fencing token
	unsure     map[rebalance.Partition]struct{} // creates whose outcome is unknown, in this session or one before
	verify     bool                             // held claims must be checked after a reconnection
	waiting    map[rebalance.Partition]bool     // watched, held by another session; kept when unwanted, so wanting it again needs no new watch
	watches    *zkwatch.Set
	dirty      bool        // something to do or to report
	holders    waits       // wanted claims found held by another session: by which, since when (see stuck.go)
	stuckTimer actor.Timer // fires at stuckAt
	stuckAt    time.Time   // when holders next has a warning due; zero if stuckTimer is stopped
	checkTimer actor.Timer // fires when the claims are due to be checked
	checkDue   bool        // the owners node is to be looked at
	cversion   int32       // the owners node's Cversion when last looked at; valid if seen
	seen       bool
	groups     groups                        // claims that wait on another's watch (see claims_group.go)
	vanished   map[rebalance.Partition]int32 // claims of this session deleted from outside while its hold record stands: the record's version (see holds.go)
	// The holders' sessions whose member nodes are watched (see holds.go),
	// and the claims that wait on each.
	sessionWatched map[int64]bool
	sessionWaiters map[int64][]rebalance.Partition
	sessionMember  map[int64]string             // the member of each of those sessions
	rewatching     map[int64]string             // those whose member node changed, to watch again
	foreignMu      sync.Mutex                   // guards foreign: looks run concurrently
	foreign        map[rebalance.Partition]bool // hold records not zkalloc's, logged
	parentsOK      bool                         // the owners and holds nodes were found, or created

	// The proof that the claims in ours are still this session's (see
	// claims_proof.go).
	base   ownersMark   // the owners node when every claim in ours was ours
	baseOK bool         // base holds, in this session
	gone   atomic.Int32 // this actor's deletes of claims that succeeded since base

	saturatedLogged bool // the owners node's saturated counter was logged (see claims_proof.go)
}

// New returns a claims actor; it starts nothing. It panics if cfg misses
// a required field: a programming error.
func New(cfg Config) *Actor {
	if f := cfg.missing(); f != "" {
		panic("claims: New: Config." + f + " is required")
	}
	return &Actor{
		cfg:        cfg,
		in:         actor.NewLatest[decision.Want](),
		out:        actor.NewLatest[decision.Held](),
		sessions:   make(map[int64]struct{}),
		ours:       make(map[rebalance.Partition]int64),
		unsure:     make(map[rebalance.Partition]struct{}),
		waiting:    make(map[rebalance.Partition]bool),
		watches:    zkwatch.New(),
		holders:    newWaits(),
		stuckTimer: actor.StoppedTimer(cfg.Clock),
		checkTimer: actor.StoppedTimer(cfg.Clock),
		groups:     newGroups(cfg.Clock),
		vanished:   make(map[rebalance.Partition]int32),
		foreign:    make(map[rebalance.Partition]bool),

		sessionWatched: make(map[int64]bool),
		sessionWaiters: make(map[int64][]rebalance.Partition),
		sessionMember:  make(map[int64]string),
		rewatching:     make(map[int64]string),
		loop:           ioloop.New(ioloop.Config{Session: cfg.Session, Clock: cfg.Clock, Logger: cfg.Logger, What: "claim update"}),
	}
}

// missing names the first required field of c that is not set, or "".
func (c Config) missing() string {
	switch {
	case c.Paths.Group == "":
		return "Paths"
	case c.Member == "":
		return "Member"
	case c.Session == nil:
		return "Session"
	case c.Logger == nil:
		return "Logger"
	case c.Clock == nil:
		return "Clock"
	case len(c.ACL) == 0:
		return "ACL"
	}
	return ""
}

// Want is where the actor takes the claims wanted from, latest-wins: the
// member's loop sets it. Safe for concurrent use.
func (c *Actor) Want() *actor.Latest[decision.Want] { return c.in }

// Held is where the actor reports the claims it holds, latest-wins: the
// member's loop takes from it. Safe for concurrent use.
func (c *Actor) Held() *actor.Latest[decision.Held] { return c.out }

// Run keeps the claims until ctx is cancelled, and returns nil then. The
// claims themselves go with the session when it is closed.
func (c *Actor) Run(ctx context.Context) error {
	defer c.watches.Close()
	defer c.checkTimer.Stop()
	defer c.stuckTimer.Stop()
	defer c.groups.timer.Stop()
	defer c.loop.Stop()
	for {
		if c.dirty {
			if stop, err := c.loop.Attempt(ctx, c.work); stop {
				return err
			}
		}
		c.armStuck()
		select {
		case <-ctx.Done():
			return nil
		case <-c.loop.Changed():
			if fresh, ok := c.loop.Take(); ok {
				c.onSession(fresh)
			}
		case <-c.in.Changed():
			if d, ok := c.in.Take(); ok {
				c.desired = d
				c.dirty = true
			}
		case f := <-c.watches.C():
			c.fired(f)
			c.drainFired()
		case <-c.loop.C():
			c.loop.Fired()
		case <-c.checkTimer.C():
			c.checkDue, c.dirty = true, true
			c.armCheck()
		case <-c.stuckTimer.C():
			c.stuckAt = time.Time{}
			c.warnStuck()
		case <-c.groups.timer.C():
			c.ungroupOld()
		}
	}
}

// onSession follows the session state just taken; fresh says it is Up on
// a new connection.
func (c *Actor) onSession(fresh bool) {
	st := c.loop.State()
	c.holders.setSession(st.Status == session.Up, stuckAfter(c.cfg.Settle, c.cfg.ReleaseTimeout, st.Timeout))
	switch st.Status {
	case session.Up:
		if _, seen := c.sessions[st.SessionID]; !seen {
			c.sessions[st.SessionID] = struct{}{}
			clear(c.ours) // a new session: the old one's claims are gone with it
			// And its hold records name a session that has ended: whoever
			// takes their partitions, this member too, replaces them.
			clear(c.vanished)
			c.baseOK = false
			// And what it waited for: the next attempt looks again.
			c.holders.clear()
			// Keep c.unsure, though the session layer fences off what
			// the client still held of the old session: should a create
			// of the old session ever run in this one, the next attempt
			// releases it if unwanted, at the cost of one read if not.
		}
		if fresh {
			c.armCheck()
			c.verify = len(c.ours) > 0
			c.forgetWatches() // re-armed by the next attempt
			// The proof's base was read from the server of the last
			// connection; this one may be another, whose counters nothing
			// says are the same. The verify takes it again.
			c.baseOK = false
		}
		c.dirty = true
	case session.Lost:
		// Keep c.ours: Lost may be our own lease running out while the
		// server still holds the session, which can then resume with its
		// claims. The next Up clears them if the session is new, or
		// verifies them if it resumed, so that those no longer wanted are
		// released rather than forgotten (and waited on by others forever).
		c.forgetWatches()
	}
}

// work brings the claims in line with the desired set in the current
// session and reports what is held.
func (c *Actor) work() error {
	conn := c.loop.State().Conn
	sid := conn.SessionID()
	if sid != c.loop.State().SessionID {
		return fmt.Errorf("session changed to %#x; waiting for its state", sid)
	}
	var mark ownersMark
	var marked bool // mark was read before the claims are verified
	if c.checkDue || c.verify {
		var err error
		if mark, marked, err = c.lookAtOwners(conn); err != nil {
			return err
		}
	}
	if c.verify {
		mine := slices.Collect(maps.Keys(c.ours))
		results := inParallel(mine, func(p rebalance.Partition) outcome { return c.check(conn, p, sid) })
		if err := c.apply(mine, results); err != nil {
			return err
		}
		c.verify = false
		if marked && conn.SessionID() == sid {
			c.rebase(mark) // each claim left in ours was read as ours after it
		}
	}
	ls := newLives(c.cfg.Logger) // the holders' sessions, read once in the attempt
	if err := c.rewatch(conn, ls); err != nil {
		return err
	}
	want := make(map[rebalance.Partition]bool, len(c.desired.Partitions))
	if c.desired.SessionID == sid {
		for _, p := range c.desired.Partitions {
			want[p] = true
		}
	}
	// A create whose outcome is unknown may have made a claim of this
	// session: if it is no longer wanted, release it too, or it would
	// stay with the session and its next owner would wait for ever.
	var release, acquire, unvanish []rebalance.Partition
	for p := range c.ours {
		if !want[p] {
			release = append(release, p)
		}
	}
	for p := range c.unsure {
		if _, ok := c.ours[p]; !ok && !want[p] {
			release = append(release, p)
		}
	}
	// In order, so that a hand-off of many claims to one member releases
	// them in the batches that member claims them in (see claims_group.go).
	rebalance.Sort(release)
	// A vanished claim is not created again while it is wanted: the
	// member revokes its partition first, and only once it no longer
	// wants it is its hold record released (see holds.go).
	for p := range c.vanished {
		if !want[p] {
			unvanish = append(unvanish, p)
		}
	}
	for _, p := range c.desired.Partitions {
		_, held := c.ours[p]
		_, vanished := c.vanished[p]
		if want[p] && !held && !vanished && !c.waiting[p] {
			acquire = append(acquire, p)
		}
	}
	c.holders.keep(func(p rebalance.Partition) bool { return want[p] })
	// Releases first: a member often gives partitions up and takes others
	// in one change, and the others wait for what it gives up. A claim that
	// fails holds up neither the others nor the report of what is held: it
	// may keep failing (a node this session may not read or delete), and
	// the attempt is retried for it anyway.
	if !c.baseOK && len(c.ours) == 0 && len(acquire) > provenReleaseAbove {
		c.baseFromNothing(conn) // so that releasing them later needs no reads
	}
	relErr := cmp.Or(c.apply(release, c.releaseAll(conn, release, sid)), c.apply(unvanish, c.releaseVanished(conn, unvanish, sid)))
	// What the first round of creates took is reported before the claims
	// held by others are looked at, one request each: a member joining a
	// large group can then start (with those partitions pending) at once.
	early := func(idx []int, results []outcome) {
		ps, rs := make([]rebalance.Partition, len(idx)), make([]outcome, len(idx))
		for k, i := range idx {
			ps[k], rs[k] = acquire[i], results[i]
		}
		_ = c.apply(ps, rs) // the creates' errors are applied again, and returned, with the rest below
		if conn.SessionID() == sid {
			c.report(sid)
		}
	}
	acqErr := c.apply(acquire, c.acquireAll(conn, acquire, sid, ls, early))
	clear(c.groups.single) // looked at one by one in this attempt
	if conn.SessionID() == sid {
		c.report(sid)
	}
	if err := cmp.Or(relErr, acqErr); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// armCheck sets the timer for the next check of the claims held.
func (c *Actor) armCheck() {
	every := c.cfg.CheckEvery
	if every == 0 {
		every = c.loop.State().Timeout
	}
	if every > 0 {
		c.checkTimer.Reset(every)
	}
}

// lookAtOwners reads the owners node's Stat and, if a claim was created
// or deleted under it since the last look (or this is the first), and
// nobody else is proven to have deleted none (see claims_proof.go), has
// every claim held checked. The Stat is read before the claims, so a
// claim deleted while they are checked changes it for the next look. It
// returns the Stat's mark, if the node exists, for the base of the next
// proof once the claims are checked. Once the node's child counter has
// saturated, nothing can be told from it: every look checks every claim.
func (c *Actor) lookAtOwners(conn zksession.Conn) (ownersMark, bool, error) {
	exists, stat, err := conn.Exists(c.cfg.Paths.Owners())
	if err != nil {
		return ownersMark{}, false, fmt.Errorf("read %s: %w", c.cfg.Paths.Owners(), err)
	}
	var cv int32 = -1
	var m ownersMark
	if exists {
		cv, m = stat.Cversion, markOf(stat)
		if m.saturated {
			c.warnSaturated()
		}
	}
	switch {
	case exists && !m.saturated && (len(c.ours) == 0 || c.proves(m)):
		c.rebase(m) // every claim in ours is still ours
		c.verify = false
	case !exists || m.saturated:
		c.baseOK = false
		c.verify = len(c.ours) > 0
	case !c.seen || cv != c.cversion:
		c.verify = len(c.ours) > 0
	}
	c.cversion, c.seen, c.checkDue = cv, true, false
	return m, exists, nil
}

func (c *Actor) path(p rebalance.Partition) string { return c.cfg.Paths.Owners() + "/" + p.String() }

// outcome is what one request sequence on one claim found. The sequences
// run concurrently; only [Actor.apply], on the actor's goroutine, changes
// the actor's state from them.
type outcome struct {
	state   claimState
	token   int64               // for held: the claim's creation zxid
	watch   <-chan zk.Event     // for waiting: fires when the holder's claim or hold record changes
	holder  int64               // for waiting: the session that holds the claim
	life    *life               // for waiting on a hold record: the holder's liveness, whose watch fires when its session ends
	behind  rebalance.Partition // for deferred: the claim whose watch it waits on
	version int32               // for vanished: the hold record's version
	err     error
	unsure  bool // with err: a create may have gone through
}

type claimState int

const (
	stateNotHeld  claimState = iota // not this session's
	stateHeld                       // this session's
	stateWaiting                    // another session's, watched
	stateDeferred                   // not looked at: waits on the watch of another claim of its batch
	stateVanished                   // this session's claim is gone, its hold record stands (see holds.go)
)

// apply records the outcomes of ps and returns the first error, after
// recording every success.
func (c *Actor) apply(ps []rebalance.Partition, results []outcome) error {
	var first error
	now := c.cfg.Clock.Now()
	for i, p := range ps {
		r := results[i]
		if r.err != nil {
			if r.unsure {
				c.unsure[p] = struct{}{}
			}
			first = cmp.Or(first, r.err)
			continue
		}
		delete(c.unsure, p)
		if r.state != stateVanished {
			delete(c.vanished, p)
		}
		switch r.state {
		case stateHeld:
			c.ours[p] = r.token
			c.holders.gone(p)
		case stateWaiting:
			delete(c.ours, p)
			c.waiting[p] = true
			c.watches.Add(p.String(), r.watch)
			c.holders.held(p, r.holder, now)
			if r.life != nil {
				c.waitSession(p, r.holder, r.life)
			}
		case stateDeferred:
			delete(c.ours, p)
			c.waiting[p] = true
			c.groups.add(r.behind, p)
		case stateVanished:
			delete(c.ours, p)
			c.holders.gone(p)
			c.vanished[p] = r.version
		default:
			delete(c.ours, p)
			c.holders.gone(p)
		}
	}
	return first
}

// inParallel runs f on every partition with the requests pipelined (see
// [inflight.Do]) and returns the outcomes in order.
func inParallel(ps []rebalance.Partition, f func(rebalance.Partition) outcome) []outcome {
	results := make([]outcome, len(ps))
	inflight.Do(len(ps), func(i int) { results[i] = f(ps[i]) })
	return results
}

// check verifies, after a reconnection or a change under the owners
// node, that p's claim is still ours. One that is not, while its hold
// record still names this session, has vanished: nobody else can take it,
// but the member must stop using it (see holds.go).
func (c *Actor) check(conn zksession.Conn, p rebalance.Partition, sid int64) outcome {
	exists, stat, err := conn.Exists(c.path(p))
	switch {
	case err != nil:
		return outcome{err: fmt.Errorf("verify claim %s: %w", p, err)}
	case exists && stat.EphemeralOwner == sid:
		return outcome{state: stateHeld, token: stat.Czxid}
	}
	hold, err := c.readHold(conn, p, sid, false)
	switch {
	case err != nil:
		return outcome{err: fmt.Errorf("verify claim %s: %w", p, err)}
	case hold.mine:
		c.cfg.Logger.Warn("zkalloc: claim held by this session was deleted from outside; its hold record keeps the partition from other members, and it is revoked until released",
			"partition", p.String())
		return outcome{state: stateVanished, version: hold.version}
	case exists:
		c.cfg.Logger.Warn("zkalloc: claim held by this session is now another's; the partition is revoked", "partition", p.String(),
			"holder", c.holderName(conn, p, stat.EphemeralOwner), "holder_session", fmt.Sprintf("%#x", stat.EphemeralOwner))
	case !hold.present:
		c.cfg.Logger.Error("zkalloc: claim and hold record of this session were both deleted from outside; another member may take the partition, which is revoked and claimed again if still wanted (never delete hold records while members run)",
			"partition", p.String())
	default:
		c.cfg.Logger.Warn("zkalloc: claim held by this session is gone and its hold record names another session; the partition is revoked", "partition", p.String())
	}
	return outcome{state: stateNotHeld}
}

func (c *Actor) ownedBefore(owner int64) bool {
	_, ok := c.sessions[owner]
	return ok && owner != 0
}

// report publishes what is held.
func (c *Actor) report(sid int64) {
	list := make([]rebalance.Partition, 0, len(c.ours))
	for p := range c.ours {
		list = append(list, p)
	}
	rebalance.Sort(list)
	tokens := make([]int64, len(list))
	for i, p := range list {
		tokens[i] = c.ours[p]
	}
	var vanished []rebalance.Partition
	if len(c.vanished) > 0 {
		vanished = slices.Collect(maps.Keys(c.vanished))
		rebalance.Sort(vanished)
	}
	c.out.Set(decision.Held{
		SessionID:  sid,
		Reconnects: c.loop.State().Reconnects,
		Seq:        c.desired.Seq,
		Partitions: list,
		Tokens:     tokens,
		Vanished:   vanished,
	})
}
