package members

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zkwatch"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures an [Actor]. Every field is required but Info, Seats
// and Drained: the allocator sets them all (its New), and [New] panics,
// naming the field, if one is missing. There are no defaults here.
type Config struct {
	Paths  zkpath.Group
	Member string
	// Info describes the process in the member's node, as JSON. If it
	// names a strategy, the member reads a few other members' nodes before
	// it first registers and refuses to join a group whose members name
	// another (see [membership.ErrStrategyMismatch]).
	Info    membership.Info
	Session *actor.Latest[zksession.State]
	// Seats keeps a seat node for this member, <group>/seats/<member>,
	// created (or its version bumped) at every registration, and lists
	// the group's seats in every View: DepartureDelay.
	Seats bool
	// ListSeats lists the group's seats in every View without keeping a
	// seat for this member: the sticky strategy without DepartureDelay,
	// so that its views' zxids are those of members with it (the record
	// is keyed by them), whatever each member's DepartureDelay. The
	// actor makes <group>/seats, empty, at every registration if it is
	// missing.
	ListSeats bool
	// Drained lists the group's drain marks, the children of
	// <group>/drained, in every View (View.Drained), watched like the
	// member list: the sticky strategy's input. The actor makes
	// <group>/drained, empty, at every registration if it is missing, so
	// that its list can be watched.
	Drained bool
	// ACL is given to the nodes the actor creates.
	ACL []zk.ACL
	// Resync is the period of the safety re-list.
	Resync time.Duration
	Logger *slog.Logger
	Clock  actor.Clock
}

// Actor is the actor that registers the member and watches the group.
// Create it with [New]; read views from [Actor.Views].
type Actor struct {
	cfg Config
	out *actor.Outbox[membership.View]

	// Owned by Run.
	loop         *ioloop.Loop       // the session state and the retries
	registeredIn int64              // the session our node was created in, 0 if none
	ownSessions  map[int64]struct{} // every session this actor has had
	needRegister bool
	data         []byte // cfg.Info, encoded for the member's node
	needPeers    bool   // before the first registration: check the others' strategy
	needOwnWatch bool   // registered: watch our own node
	needList     bool
	watch        <-chan zk.Event // on the member list
	ownWatch     <-chan zk.Event // on our own node: deleted, or changed, by someone else
	last         membership.View
	published    bool
	verdicts     verdicts // which children of members/ are members
	refused      string   // the last list refused by the bounds, as logged

	expire    *actor.Latest[[]membership.Seat] // seats to delete, from Expire
	toExpire  []membership.Seat                // taken from expire, not yet deleted
	needSeat  bool                             // create or bump our seat (cfg.Seats)
	seatWatch <-chan zk.Event                  // on the seat list; nil once fired, or to list it again
	seatList  childList                        // the seat list as last read, while seatWatch holds

	needSeatsDir bool                // make <group>/seats if it is missing (cfg.ListSeats)
	needDrained  bool                // make <group>/drained if it is missing (cfg.Drained)
	drainedWatch <-chan zk.Event     // on the drain marks' list; nil once fired, or to list it again
	drainedList  childList           // the drain marks as last read, while drainedWatch holds
	drainWarned  map[string]struct{} // drain marks logged as not a member's name

	// Before the first registration, a name held by another live
	// session is waited for (see [Actor.Waiting]).
	joined      bool            // registered once: a name taken from now on is a duplicate
	holderWatch <-chan zk.Event // on the node another session holds; nil unless waiting
	warned      int64           // the holder session whose wait was logged
	waitSince   time.Time       // when the wait for the name began; zero if none

	mu      sync.Mutex
	waiting error // what the wait is for, for Waiting; nil if none
}

// New returns a members actor; it starts nothing. It panics if cfg
// misses a required field: a programming error.
func New(cfg Config) *Actor {
	if f := cfg.missing(); f != "" {
		panic("members: New: Config." + f + " is required")
	}
	return &Actor{
		cfg:         cfg,
		out:         actor.NewOutbox[membership.View](),
		loop:        ioloop.New(ioloop.Config{Session: cfg.Session, Clock: cfg.Clock, Logger: cfg.Logger, What: "membership update", Fatal: isFatal}),
		ownSessions: make(map[int64]struct{}),
		data:        cfg.Info.Data(),
		needPeers:   cfg.Info.Strategy != "",
		expire:      actor.NewLatest[[]membership.Seat](),
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
	case len(c.ACL) == 0:
		return "ACL"
	case c.Resync <= 0:
		return "Resync"
	case c.Logger == nil:
		return "Logger"
	case c.Clock == nil:
		return "Clock"
	}
	return ""
}

// Waiting returns an error wrapping [membership.ErrDuplicateMember]
// that names the session holding this member's name, with its host, pid
// and start as its node says, while Run waits for that session to end
// before the first registration; nil otherwise. It is safe for
// concurrent use: the allocator's Start reads it to say why it is still
// waiting.
func (m *Actor) Waiting() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waiting
}

func (m *Actor) setWaiting(err error) {
	m.mu.Lock()
	m.waiting = err
	m.mu.Unlock()
}

// Views delivers member lists, latest-wins: a slow reader gets the newest
// and never blocks the actor. It is closed when Run returns.
func (m *Actor) Views() <-chan membership.View { return m.out.C() }

// Run registers the member and publishes views until ctx is cancelled
// (returning nil), the name is found taken by another live session
// after the first registration (returning an error wrapping
// [membership.ErrDuplicateMember]) or, before the first registration,
// another member is found running another strategy
// ([membership.ErrStrategyMismatch]), the list is full
// ([membership.ErrGroupFull]) or the name is a node that is not a
// member's (persistent: ErrDuplicateMember). ZooKeeper errors are
// retried with backoff for as long as it runs.
//
// Before the first registration, a name held by another live session
// is waited for: a crashed earlier run of this member whose session has
// not yet expired, restarted faster than its session timeout. Run logs
// the holder once, at Warn, watches its node, and registers as soon as
// the node is gone; [Actor.Waiting] says meanwhile who holds it. Only
// the caller's ctx bounds that wait: the allocator's Start.
func (m *Actor) Run(ctx context.Context) error {
	defer m.out.Close()
	resync := m.cfg.Clock.NewTimer(m.cfg.Resync)
	defer resync.Stop()
	defer m.loop.Stop()

	for {
		if m.hasWork() {
			if stop, err := m.loop.Attempt(ctx, m.work); stop {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.loop.Changed():
			if fresh, ok := m.loop.Take(); ok {
				m.onSession(fresh)
			}
		case <-m.watch:
			m.watch = nil
			m.needList = true
		case <-m.seatWatch:
			m.seatWatch = nil
			m.needList = true
		case <-m.drainedWatch:
			m.drainedWatch = nil
			m.needList = true
		case <-m.expire.Changed():
			if seats, ok := m.expire.Take(); ok {
				m.toExpire = seats
			}
		case <-m.holderWatch:
			// The node another session held is gone or changed: try
			// again.
			m.holderWatch = nil
		case <-m.ownWatch:
			// Our node was deleted or changed by someone else: check that
			// it is still ours, and refuse to go on if another process
			// has taken the name meanwhile.
			m.ownWatch = nil
			m.needRegister = true
		case <-resync.C():
			m.needList = true
			m.seatWatch, m.drainedWatch = nil, nil // list everything again
			resync.Reset(m.cfg.Resync)
		case <-m.loop.C():
			m.loop.Fired()
		case m.out.Send() <- m.out.Pending():
			m.out.Sent()
		}
	}
}

// hasWork reports whether there is ZooKeeper work to attempt: none while
// waiting for the holder of the name, whose watch says when to try again.
func (m *Actor) hasWork() bool {
	if m.holderWatch != nil {
		return false
	}
	return m.needRegister || m.needOwnWatch || m.needList || m.needSeat || m.needDrained || len(m.toExpire) > 0
}

// onSession follows the session state just taken; fresh says it is Up on
// a new connection.
func (m *Actor) onSession(fresh bool) {
	st := m.loop.State()
	switch st.Status {
	case session.Up:
		m.ownSessions[st.SessionID] = struct{}{}
		if st.SessionID != m.registeredIn {
			m.needRegister = true
		}
		if fresh {
			// The old watches may not have survived the reconnection:
			// check the node (and re-arm its watch) and list again.
			m.needRegister = true
			m.needList = true
			m.holderWatch = nil
			m.seatWatch, m.drainedWatch = nil, nil
		}
	case session.Lost:
		m.registeredIn = 0
		m.holderWatch = nil // look again in the next session
	}
}

// work registers and lists as needed, in the current session.
func (m *Actor) work() error {
	conn := m.loop.State().Conn
	if m.needRegister {
		// The parents a sticky member lists are made before its node,
		// so that their creation is older than the list's change this
		// registration makes: the member's view then has the zxid a
		// member of a stateless strategy reads (they agree on
		// Generation in a group upgrading from balanced).
		m.needSeatsDir = m.needSeatsDir || m.cfg.ListSeats && !m.cfg.Seats
		m.needDrained = m.needDrained || m.cfg.Drained
	}
	if m.needPeers {
		// Alongside the check of the peers, on the first registration:
		// the client pipelines the requests, one round trip fewer
		// before a newcomer's node. (A member the check refuses leaves
		// the two empty parents behind.)
		var parentsErr error
		var wg sync.WaitGroup
		wg.Go(func() { parentsErr = m.ensureParents(conn) })
		err := m.checkPeers(conn)
		wg.Wait()
		if err := cmp.Or(err, parentsErr); err != nil {
			return err
		}
		m.needPeers = false
	}
	if m.needRegister {
		if err := m.ensureParents(conn); err != nil { // done already, unless a later registration
			return err
		}
		if err := m.register(conn); err != nil {
			return err
		}
		if m.holderWatch != nil {
			return nil // waiting for the holder of the name: nothing else to do before joining
		}
		m.needRegister = false
		m.needOwnWatch = true
		m.needList = true
		m.needSeat = m.cfg.Seats
	}
	if m.needSeat {
		if err := m.ensureSeat(conn); err != nil {
			return err
		}
		m.needSeat = false
	}
	if err := m.ensureParents(conn); err != nil {
		return err
	}
	if len(m.toExpire) > 0 {
		if err := m.expireSeats(conn); err != nil {
			return err
		}
	}
	if m.needOwnWatch {
		// Watch our own node and list the members at once: the client
		// pipelines the two requests, one round trip instead of two on
		// every start.
		p, sid := m.cfg.Paths.Member(m.cfg.Member), m.registeredIn
		var own ownWatch
		done := make(chan struct{})
		go func() {
			defer close(done)
			own = watchOwn(conn, p, sid)
		}()
		var err error
		if m.needList { // not if only the watch failed last time
			err = m.list(conn)
		}
		<-done
		switch {
		case own.gone:
			m.needRegister = true // gone or replaced already: the retry looks again
			return fmt.Errorf("%s changed while registering", p)
		case own.err != nil:
			return fmt.Errorf("watch %s: %w", p, own.err)
		}
		m.ownWatch, m.needOwnWatch = own.watch, false
		return err
	}
	if m.needList {
		return m.list(conn)
	}
	return nil
}

// maxRounds bounds the readings of one attempt to list the members: past
// it, the list is changing faster than it can be read, and the attempt
// fails, to be retried after a pause (see [Actor.list]).
const maxRounds = 8

// errUnsettled says that the list kept changing while it was read.
var errUnsettled = errors.New("the member list kept changing while it was read")

// list lists the members (and the seats and drain marks), arms the
// watches and publishes the view, once a reading holds still: a reading
// after which a watch it armed has fired, or a listed node was found
// gone, is read again instead of published. ZooKeeper sends a watch's
// event before any later reply on the connection, and the client closes
// the watch's channel before it hands that reply over (see
// internal/partset's Set.changedSince, and its
// TestWatchFiresBeforeLaterReply), so a reading whose watches are all
// open once its last reply is in is the lists as the server had them
// then: the group as it was at the view's zxid, the newest of the lists'
// pzxids. Without it, a node listed but deleted before it was read was
// left out of a view with the list's pzxid, which another member kept;
// and with seats, a member list read before a join could be paired with
// a seat list read after it, under the seat list's newer pzxid (issue
// 26); so could a list of drain marks read before a drain be paired with
// a member list read after a later join. It fails with errUnsettled
// after maxRounds readings that each found a change.
func (m *Actor) list(conn zksession.Conn) error {
	for round := 0; ; round++ {
		if round == maxRounds {
			return fmt.Errorf("%w (%d readings)", errUnsettled, round)
		}
		v, settled, err := m.read(conn)
		if err != nil || v == nil {
			return err
		}
		if !settled || v.Outdated() {
			continue
		}
		m.needList = false
		if _, found := slices.BinarySearch(v.Members, m.cfg.Member); !found {
			m.cfg.Logger.Warn("zkalloc: own member node is missing; registering again")
			m.needRegister = true
		}
		m.publish(*v)
		return nil
	}
}

// ensureParents makes the parents of the lists the member reads but
// keeps no node in, seats/ (ListSeats) and drained/ (Drained), if they
// are due.
func (m *Actor) ensureParents(conn zksession.Conn) error {
	// Pipelined: one round trip for both on a join's path.
	var seatsErr, drainedErr error
	var wg sync.WaitGroup
	if m.needSeatsDir {
		wg.Go(func() { seatsErr = zkpath.Ensure(conn, m.cfg.Paths.Seats(), m.cfg.ACL...) })
	}
	if m.needDrained {
		wg.Go(func() { drainedErr = zkpath.Ensure(conn, m.cfg.Paths.Drained(), m.cfg.ACL...) })
	}
	wg.Wait()
	if seatsErr == nil {
		m.needSeatsDir = false
	}
	if drainedErr == nil {
		m.needDrained = false
	}
	switch {
	case seatsErr != nil:
		return fmt.Errorf("seats: %w", seatsErr)
	case drainedErr != nil:
		return fmt.Errorf("drain marks: %w", drainedErr)
	}
	return nil
}

// read makes one reading of the list (and the seats and drain marks)
// and arms their watches. It returns the view, and whether every node it
// listed was found (a node gone meanwhile is left out, and the reading
// must be made again); a nil view without an error if the list is
// refused by the bounds (its watch is armed).
func (m *Actor) read(conn zksession.Conn) (*membership.View, bool, error) {
	// The seats and the drain marks are listed alongside the members: the
	// client pipelines the requests, one round trip for the three. A list
	// whose watch has not fired is not read again: it is as last read,
	// up to the member list's reply, which ZooKeeper would have sent
	// after the watch's event (see [Actor.list]). A join or a leave
	// lists only the members.
	var sl, dl childList
	var wg sync.WaitGroup
	listSeats := m.cfg.Seats || m.cfg.ListSeats
	relistSeats := listSeats && (m.seatWatch == nil || zkwatch.AnyFired(m.seatWatch)())
	relistDrained := m.cfg.Drained && (m.drainedWatch == nil || zkwatch.AnyFired(m.drainedWatch)())
	if relistSeats {
		wg.Go(func() { sl = listChildren(conn, m.cfg.Paths.Seats()) })
	} else if listSeats {
		sl = m.seatList
	}
	if relistDrained {
		wg.Go(func() { dl = listChildren(conn, m.cfg.Paths.Drained()) })
	} else if m.cfg.Drained {
		dl = m.drainedList
	}
	names, stat, watch, err := conn.ChildrenW(m.cfg.Paths.Members())
	wg.Wait()
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			m.needRegister = true // the group was deleted under us
		}
		return nil, false, fmt.Errorf("list members %s: %w", m.cfg.Paths.Members(), err)
	}
	m.watch = watch
	if relistSeats && sl.err == nil {
		m.seatWatch, m.seatList = sl.watch, sl
	}
	if relistDrained && dl.err == nil {
		m.drainedWatch, m.drainedList = dl.watch, dl
	}
	if err := checkBounds(names, 0); err != nil {
		// Refused until the list changes: its watch is armed. Reading it
		// again sooner would only load the server.
		m.needList = false
		if msg := err.Error(); msg != m.refused {
			m.refused = msg
			m.cfg.Logger.Error("zkalloc: refusing the member list; keeping the last one until it changes", "path", m.cfg.Paths.Members(), "err", msg)
		}
		return nil, false, nil
	}
	m.refused = ""
	slices.Sort(names)
	members, weights, balanced, whole, err := m.members(conn, names, stat)
	if err != nil {
		return nil, false, err
	}
	v := membership.View{Members: members, Weights: weights, Balanced: balanced, Zxid: stat.Pzxid, SessionID: conn.SessionID(), Reconnects: m.loop.State().Reconnects}
	if listSeats {
		if sl.err != nil {
			if errors.Is(sl.err, zk.ErrNoNode) {
				// Deleted under us: our seat makes the parent again, or
				// (listing only) we make it.
				m.needSeat, m.needSeatsDir = m.cfg.Seats, !m.cfg.Seats
			}
			return nil, false, fmt.Errorf("list seats: %w", sl.err)
		}
		if v.Seats, err = seats(conn, m.cfg.Paths, sl.names, members); err != nil {
			return nil, false, err
		}
		v.Zxid = max(v.Zxid, sl.stat.Pzxid)
		if _, found := slices.BinarySearch(sl.names, m.cfg.Member); m.cfg.Seats && !found && m.registeredIn == conn.SessionID() {
			m.needSeat = true // deleted as we came back: make it again
		}
	}
	if m.cfg.Drained {
		if dl.err != nil {
			if errors.Is(dl.err, zk.ErrNoNode) {
				m.needDrained = true // deleted under us: make it again
			}
			return nil, false, fmt.Errorf("list drain marks %s: %w", m.cfg.Paths.Drained(), dl.err)
		}
		v.Drained = m.drained(dl.names)
		v.Zxid = max(v.Zxid, dl.stat.Pzxid)
	}
	v.Changed = zkwatch.AnyFired(watch, m.seatWatch, m.drainedWatch)
	return &v, whole, nil
}

// childList is a reading of a node's children, with a watch on them.
type childList struct {
	names []string
	stat  *zk.Stat
	watch <-chan zk.Event
	err   error
}

// listChildren lists p's children and arms a watch on them. It changes
// nothing in the actor, so that it can run alongside the member list.
func listChildren(conn zksession.Conn, p string) childList {
	names, stat, watch, err := conn.ChildrenW(p)
	return childList{names: names, stat: stat, watch: watch, err: err}
}

// isFatal says which errors end Run instead of being retried.
func isFatal(err error) bool {
	return errors.Is(err, membership.ErrDuplicateMember) || errors.Is(err, membership.ErrStrategyMismatch) || errors.Is(err, membership.ErrGroupFull)
}

// register creates the member's ephemeral node in the current session.
func (m *Actor) register(conn zksession.Conn) error {
	p := m.cfg.Paths.Member(m.cfg.Member)
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("register %s: node keeps changing", p)
		}
		sid := conn.SessionID()
		_, err := conn.Create(p, m.data, zk.FlagEphemeral, m.cfg.ACL)
		switch {
		case err == nil:
			m.registered(sid)
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := zkpath.Ensure(conn, m.cfg.Paths.Members(), m.cfg.ACL...); err != nil {
				return fmt.Errorf("create %s: %w", m.cfg.Paths.Members(), err)
			}
		case errors.Is(err, zk.ErrNodeExists):
			data, stat, err := conn.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				continue // gone meanwhile: create it
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			switch decide(stat.EphemeralOwner, sid, m.ownSessions, m.joined) {
			case keep:
				m.registeredIn, m.joined = sid, true
				return nil
			case replace:
				m.cfg.Logger.Info("zkalloc: replacing member node left by an earlier session", "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
				if err := conn.Delete(p, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
					return fmt.Errorf("delete stale %s: %w", p, err)
				}
			case wait:
				w, err := m.watchHolder(conn, p, stat.EphemeralOwner)
				if err != nil {
					return err
				}
				if w == nil {
					continue // gone or replaced meanwhile: try again
				}
				m.await(w, stat.EphemeralOwner, data)
				return nil
			case refuse:
				if !membership.IsMember(stat.EphemeralOwner) {
					return fmt.Errorf("%w: %s is a node that is not a member's (ephemeral owner %#x, %s); delete it by hand",
						membership.ErrDuplicateMember, p, stat.EphemeralOwner, describe(data))
				}
				return fmt.Errorf("%w: %q is held by session %#x (%s) since this member joined: another process uses the name",
					membership.ErrDuplicateMember, m.cfg.Member, stat.EphemeralOwner, describe(data))
			}
		default:
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
}

// registered notes that the member's node is ours in session sid.
func (m *Actor) registered(sid int64) {
	m.registeredIn, m.joined = sid, true
	args := []any{"session", fmt.Sprintf("%#x", sid)}
	if !m.waitSince.IsZero() {
		args = append(args, "waited", m.cfg.Clock.Now().Sub(m.waitSince).Round(time.Millisecond))
		m.waitSince = time.Time{}
		m.setWaiting(nil)
	}
	m.cfg.Logger.Info("zkalloc: member registered", args...)
}

// watchHolder arms a watch on p, the member's node, held by session
// owner; nil, without an error, if it is gone or no longer owner's.
func (m *Actor) watchHolder(conn zksession.Conn, p string, owner int64) (<-chan zk.Event, error) {
	exists, stat, w, err := conn.ExistsW(p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("watch %s: %w", p, err)
	case !exists || stat.EphemeralOwner != owner:
		return nil, nil
	}
	return w, nil
}

// await waits, through w, for session owner, which holds the member's
// node (whose data is data), to end; the first time for this owner it
// logs who holds the name and how long that may take.
func (m *Actor) await(w <-chan zk.Event, owner int64, data []byte) {
	m.holderWatch = w
	// The holder's session timeout is not known here: a member's own is
	// the best guess, since the members of a group are configured alike.
	timeout := m.loop.State().Timeout
	if m.waitSince.IsZero() {
		m.waitSince = m.cfg.Clock.Now()
	}
	m.setWaiting(fmt.Errorf("%w: %q is held by session %#x (%s); waiting for that session to end, within its timeout (this member's is %v) if its process is gone",
		membership.ErrDuplicateMember, m.cfg.Member, owner, describe(data), timeout))
	if m.warned == owner {
		return
	}
	m.warned = owner
	args := []any{"holder", fmt.Sprintf("%#x", owner)}
	if i, ok := membership.ParseInfo(data); ok && i.Host != "" {
		args = append(args, "host", i.Host, "pid", i.PID, "started", i.Started)
	} else {
		args = append(args, "data", describe(data))
	}
	args = append(args, "timeout", timeout)
	m.cfg.Logger.Warn("zkalloc: member name held by another session; waiting for it to end (a crashed earlier run's session expires within its timeout)", args...)
}

// ownWatch is what [watchOwn] found.
type ownWatch struct {
	watch <-chan zk.Event
	gone  bool // the node is gone or no longer session sid's
	err   error
}

// watchOwn arms a watch on our own node p, created in session sid, so that
// its deletion or a change by someone else is noticed at once rather than
// at the next list. It changes nothing in the actor, so that it can run
// alongside a list.
func watchOwn(conn zksession.Conn, p string, sid int64) ownWatch {
	exists, stat, w, err := conn.ExistsW(p)
	switch {
	case err != nil:
		return ownWatch{err: err}
	case !exists || stat.EphemeralOwner != sid:
		return ownWatch{gone: true}
	}
	return ownWatch{watch: w}
}

// decision is what to do with an existing member node.
type decision int

const (
	keep    decision = iota // it is ours already, in the current session
	replace                 // one of our earlier sessions left it
	wait                    // another live session holds it, before we joined: wait for it to end
	refuse                  // someone else holds it after we joined (or it is not ephemeral)
)

// decide says what to do with a member node whose ephemeral owner is
// owner, when the current session is current, own holds every session
// this actor has had, and joined says whether it has registered before.
//
// Before the first registration another session's node is most likely
// a crashed earlier run of this member, restarted before its session
// expired: wait for it. Once joined, a name taken by another session
// was taken while ours was gone (our own earlier sessions' nodes are
// replaced), by another process that uses the name: refuse it.
func decide(owner, current int64, own map[int64]struct{}, joined bool) decision {
	switch {
	case !membership.IsMember(owner):
		return refuse // a persistent or container node: not a member at all, even if current is 0 (no session)
	case owner == current:
		return keep
	}
	if _, ok := own[owner]; ok {
		return replace
	}
	if !joined {
		return wait
	}
	return refuse
}

func (m *Actor) publish(v membership.View) {
	if m.published && v.Equal(m.last) && !m.last.Outdated() {
		return // a view whose watches fired is replaced, even by its like: the shell waits for one that holds
	}
	m.last, m.published = v, true
	m.cfg.Logger.Debug("zkalloc: member view", "zxid", v.Zxid, "members", len(v.Members), "away", len(v.Away()), "drained", len(v.Drained))
	m.out.Put(v)
}
