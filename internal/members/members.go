package members

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures an [Actor]. Every field is required but Info and
// Seats: the allocator sets them all (its New), and [New] panics, naming
// the field, if one is missing. There are no defaults here.
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
	seatWatch <-chan zk.Event                  // on the seat list
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

// Views delivers member lists, latest-wins: a slow reader gets the newest
// and never blocks the actor. It is closed when Run returns.
func (m *Actor) Views() <-chan membership.View { return m.out.C() }

// Run registers the member and publishes views until ctx is cancelled
// (returning nil), the name is found in use by another live session
// (returning an error wrapping [membership.ErrDuplicateMember]) or,
// before the first registration, another member is found running another
// strategy ([membership.ErrStrategyMismatch]) or the list is full
// ([membership.ErrGroupFull]). ZooKeeper errors are retried with backoff
// for as long as it runs.
func (m *Actor) Run(ctx context.Context) error {
	defer m.out.Close()
	resync := m.cfg.Clock.NewTimer(m.cfg.Resync)
	defer resync.Stop()
	defer m.loop.Stop()

	for {
		if m.needRegister || m.needOwnWatch || m.needList || m.needSeat || len(m.toExpire) > 0 {
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
		case <-m.expire.Changed():
			if seats, ok := m.expire.Take(); ok {
				m.toExpire = seats
			}
		case <-m.ownWatch:
			// Our node was deleted or changed by someone else: check that
			// it is still ours, and refuse to go on if another process
			// has taken the name meanwhile.
			m.ownWatch = nil
			m.needRegister = true
		case <-resync.C():
			m.needList = true
			resync.Reset(m.cfg.Resync)
		case <-m.loop.C():
			m.loop.Fired()
		case m.out.Send() <- m.out.Pending():
			m.out.Sent()
		}
	}
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
		}
	case session.Lost:
		m.registeredIn = 0
	}
}

// work registers and lists as needed, in the current session.
func (m *Actor) work() error {
	conn := m.loop.State().Conn
	if m.needPeers {
		if err := m.checkPeers(conn); err != nil {
			return err
		}
		m.needPeers = false
	}
	if m.needRegister {
		if err := m.register(conn); err != nil {
			return err
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

// list lists the members, arms the list's watch and publishes the view.
func (m *Actor) list(conn zksession.Conn) error {
	var sl seatList
	done := make(chan struct{})
	if m.cfg.Seats { // pipelined with the member list
		go func() {
			defer close(done)
			sl = listSeats(conn, m.cfg.Paths)
		}()
	} else {
		close(done)
	}
	names, stat, watch, err := conn.ChildrenW(m.cfg.Paths.Members())
	<-done
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			m.needRegister = true // the group was deleted under us
		}
		return fmt.Errorf("list members %s: %w", m.cfg.Paths.Members(), err)
	}
	m.watch = watch
	if m.cfg.Seats && sl.err == nil {
		m.seatWatch = sl.watch
	}
	if err := checkBounds(names, 0); err != nil {
		// Refused until the list changes: its watch is armed. Reading it
		// again sooner would only load the server.
		m.needList = false
		if msg := err.Error(); msg != m.refused {
			m.refused = msg
			m.cfg.Logger.Error("zkalloc: refusing the member list; keeping the last one until it changes", "path", m.cfg.Paths.Members(), "err", msg)
		}
		return nil
	}
	m.refused = ""
	slices.Sort(names)
	members, err := m.members(conn, names, stat.Pzxid)
	if err != nil {
		return err
	}
	v := membership.View{Members: members, Zxid: stat.Pzxid, SessionID: conn.SessionID(), Reconnects: m.loop.State().Reconnects}
	if m.cfg.Seats {
		if sl.err != nil {
			if errors.Is(sl.err, zk.ErrNoNode) {
				m.needSeat = true // deleted under us: our seat makes the parent again
			}
			return fmt.Errorf("list seats: %w", sl.err)
		}
		if v.Seats, err = seats(conn, m.cfg.Paths, sl.names, members); err != nil {
			return err
		}
		v.Zxid = max(v.Zxid, sl.stat.Pzxid)
		if _, found := slices.BinarySearch(sl.names, m.cfg.Member); !found && m.registeredIn == conn.SessionID() {
			m.needSeat = true // deleted as we came back: make it again
		}
	}
	m.needList = false
	if _, found := slices.BinarySearch(names, m.cfg.Member); !found {
		m.cfg.Logger.Warn("zkalloc: own member node is missing; registering again")
		m.needRegister = true
	}
	m.publish(v)
	return nil
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
			m.registeredIn = sid
			m.cfg.Logger.Info("zkalloc: member registered", "session", fmt.Sprintf("%#x", sid))
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
			switch decide(stat.EphemeralOwner, sid, m.ownSessions) {
			case keep:
				m.registeredIn = sid
				return nil
			case replace:
				m.cfg.Logger.Info("zkalloc: replacing member node left by an earlier session", "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
				if err := conn.Delete(p, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
					return fmt.Errorf("delete stale %s: %w", p, err)
				}
			case refuse:
				return fmt.Errorf("%w: %q is held by session %#x (%s); if that is an earlier run of this member that crashed, its session expires within its timeout",
					membership.ErrDuplicateMember, m.cfg.Member, stat.EphemeralOwner, describe(data))
			}
		default:
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
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
	refuse                  // someone else holds it (or it is not ephemeral)
)

// decide says what to do with a member node whose ephemeral owner is
// owner, when the current session is current and own holds every session
// this actor has had.
func decide(owner, current int64, own map[int64]struct{}) decision {
	switch {
	case owner == 0:
		return refuse // a persistent node: not a member at all, even if current is 0 (no session)
	case owner == current:
		return keep
	}
	if _, ok := own[owner]; ok {
		return replace
	}
	return refuse
}

func (m *Actor) publish(v membership.View) {
	if m.published && v.Equal(m.last) {
		return
	}
	m.last, m.published = v, true
	m.out.Put(v)
}
