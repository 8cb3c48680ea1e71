package zksession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/session"
)

// handshakeFraction of the session timeout bounds the wait for the answer
// to a connect request (see contactConn), so that the client gives up on a
// connection that is never answered early enough to dial again (it pauses
// a second after trying every server) and resume the session before it
// expires. The timeout is the one the server last granted, which is what
// the client asks for again and what the server expires the session by;
// the one in [Config.Timeout] only until a server first answers.
const handshakeFraction = 1.0 / 3

// Config configures a [Session]. Every field is required but WrapConn,
// Auth and QuorumCheck: the allocator sets them all (its New), and
// [New] panics, naming the field, if one is missing. There are no
// defaults here.
type Config struct {
	Servers []string
	// Timeout is the session timeout asked of the server, which may grant
	// another within its bounds.
	Timeout time.Duration
	// Dialer opens connections to servers, such as net.DialTimeout.
	// Tests use it to put a fault-injecting proxy in the way.
	Dialer zk.Dialer
	// WrapConn, if set, wraps the client handed to subscribers, for
	// instrumentation such as counting requests.
	WrapConn func(Conn) Conn
	// Auth is given to the server on every connection before any request
	// of the subscribers' (see authenticate).
	Auth []Auth
	// QuorumCheck, if not empty, is the path of a node that exists while
	// the session is in use (the allocator gives its group's node), and
	// makes the lease a quorum lease (see lease.go): it is renewed only by
	// requests the ensemble commits, multis that check this node's
	// version, sent in place of the syncs, so that a leader cut off from
	// its quorum cannot renew it. Each one is a transaction that every
	// server logs: 4/T a second. The allocator sets it when
	// DisconnectGrace > 0. A check that fails (the node is missing, or
	// not readable with the session's credentials) renews nothing.
	QuorumCheck string
	Logger      *slog.Logger
	Clock       actor.Clock
}

// Session is the actor that owns the ZooKeeper client. Create it with
// [New], add subscribers with [Session.Subscribe], then call
// [Session.Run]. Run connects, publishes [State]s until ctx is cancelled,
// then closes the client, which makes the server delete this session's
// ephemeral nodes at once, and waits for the client's goroutines.
type Session struct {
	cfg    Config
	subs   []stateSink
	events eventQueue

	contact   contact
	link      *link
	failures  failures
	connsMu   sync.Mutex
	conns     map[net.Conn]struct{} // open connections, closed at shutdown so the client stops at once
	closing   bool                  // shutdown has begun: refuse new connections
	state     State                 // owned by Run
	lease     lease                 // owned by Run
	grantLog  int64                 // the session whose granted timeout was logged; owned by Run
	bigLogged atomic.Int64          // see contactConn.tooBig
	// authPending, if not nil, answers a credentials request left behind
	// by a Run that was cancelled meanwhile; owned by Run.
	authPending chan error
}

// New returns a session actor; it starts nothing. It panics if cfg
// misses a required field: a programming error.
func New(cfg Config) *Session {
	if f := cfg.missing(); f != "" {
		panic("zksession: New: Config." + f + " is required")
	}
	s := &Session{cfg: cfg, events: newEventQueue(), link: newLink(), conns: make(map[net.Conn]struct{})}
	s.lease.quorum = cfg.QuorumCheck != ""
	s.failures.logger, s.failures.now = cfg.Logger, cfg.Clock.Now
	return s
}

// missing names the first required field of c that is not set, or "".
func (c Config) missing() string {
	switch {
	case len(c.Servers) == 0:
		return "Servers"
	case c.Timeout <= 0:
		return "Timeout"
	case c.Dialer == nil:
		return "Dialer"
	case c.Logger == nil:
		return "Logger"
	case c.Clock == nil:
		return "Clock"
	}
	return ""
}

// Failure reports whether a session is up and, if none is, the last error
// met reaching a server since one last was: a dial that failed, a
// connection that ended before the server answered the connect request
// (the error names the server), or a client that could not be created.
// It is nil while a session is up, or if no attempt has failed yet. Safe
// for concurrent use.
func (s *Session) Failure() (up bool, err error) { return s.failures.snapshot() }

// Subscribe returns a new latest-wins cell that receives every state the
// session publishes, starting with the current one. Call it before Run.
func (s *Session) Subscribe() *actor.Latest[State] {
	l := actor.NewLatest[State]()
	s.subs = append(s.subs, l)
	return l
}

// Observe returns a new latest-wins cell like [Session.Subscribe]'s that
// receives every state without the connection: for the member's
// decisions, which take the state and make no request. Call it before
// Run.
func (s *Session) Observe() *actor.Latest[session.State] {
	l := actor.NewLatest[session.State]()
	s.subs = append(s.subs, plainSink{l})
	return l
}

// stateSink receives every state the session publishes; Set must not
// block. An [actor.Latest] is one; tests add recorders.
type stateSink interface{ Set(State) }

// plainSink hands a [session.State] cell the states without their
// connection.
type plainSink struct{ l *actor.Latest[session.State] }

func (p plainSink) Set(st State) { p.l.Set(st.State) }

// clientState is what the session reads of the client's own state: a
// *zk.Conn, or a fake in tests.
type clientState interface {
	State() zk.State
	SessionID() int64
}

var _ clientState = (*zk.Conn)(nil)

// Credentials returns the ID and password of the session last granted by a
// server. Tests use them to expire the session on purpose. Safe for
// concurrent use.
func (s *Session) Credentials() (int64, []byte) { return s.contact.credentials() }

// Run connects and publishes states until ctx is cancelled. It returns
// nil after a cancellation, once the client is closed and its goroutines
// have exited, or an error if the client cannot be created.
func (s *Session) Run(ctx context.Context) error {
	if ctx.Err() != nil {
		s.publish(State{State: session.State{Status: session.Closed, Since: s.cfg.Clock.Now()}})
		return nil
	}
	client, events, err := s.connect(ctx)
	if err != nil {
		s.publish(State{State: session.State{Status: session.Closed, Since: s.cfg.Clock.Now()}})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	gate := newGatedConn(client, s.link)
	syncs := newSyncer(gate, s.cfg.Clock, s.cfg.QuorumCheck)
	syncCtx, stopSyncs := context.WithCancel(context.Background())
	syncsDone := make(chan struct{})
	go func() {
		defer close(syncsDone)
		syncs.run(syncCtx)
	}()
	defer func() {
		stopSyncs()
		// A request in flight returns once the gate refuses requests or
		// the client is closed.
		s.shutdown(client, gate, events)
		if !waitDone(syncsDone, stopTimeout) {
			s.cfg.Logger.Error("zkalloc: a ZooKeeper request of the session lease did not return; leaving it behind")
		}
		if s.authPending != nil && !waitDone(s.authPending, stopTimeout) {
			s.cfg.Logger.Error("zkalloc: a ZooKeeper credentials request did not return; leaving it behind")
		}
		s.state.Status, s.state.Since, s.state.Ended = session.Closed, s.cfg.Clock.Now(), false
		s.publish(s.state)
	}()

	if err := s.authenticate(ctx, client); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var conn Conn = gate
	if s.cfg.WrapConn != nil {
		conn = s.cfg.WrapConn(conn)
	}
	s.state = State{State: session.State{Status: session.Connecting, Since: s.cfg.Clock.Now(), Timeout: s.cfg.Timeout}, Conn: conn}
	s.publish(s.state)

	s.runLoop(ctx, client, syncs)
	return nil
}

// runLoop publishes states until ctx is cancelled. It keeps the lease (see
// lease.go): it asks syncs for a request (a sync, or a check in the
// quorum lease) at once on each new connection and syncEvery after the
// last one returned, renews the lease with the answers, and reports Lost
// when the lease runs out, in any state.
func (s *Session) runLoop(ctx context.Context, client *zk.Conn, syncs *syncer) {
	leaseTimer := actor.StoppedTimer(s.cfg.Clock)
	defer leaseTimer.Stop()
	syncTimer := actor.StoppedTimer(s.cfg.Clock)
	defer syncTimer.Stop()
	inFlight := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.events.wake:
			connected := false
			for _, ev := range s.events.drain() {
				connected = s.apply(ev, client) || connected
			}
			if connected && !inFlight {
				syncTimer.Reset(0) // the first request of a connection goes at once
			}
		case <-syncTimer.C():
			if inFlight || (s.state.Status != session.Up && s.state.Status != session.Lost) {
				break // one at a time; while Suspended one waits in the gate anyway
			}
			if !syncs.start(ctx) {
				return
			}
			inFlight = true
		case r := <-syncs.results:
			inFlight = false
			s.synced(r, client)
			syncTimer.Reset(syncEvery(s.timeout()))
		case <-leaseTimer.C():
			s.checkLease()
		}
		if s.state.Status == session.Up || s.state.Status == session.Suspended {
			leaseTimer.Reset(s.leaseLeft())
		} else {
			leaseTimer.Stop()
		}
	}
}

// checkLease reports the session Lost, but not ended, if its lease has
// run out while it was Up or Suspended: the server may still hold it.
func (s *Session) checkLease() {
	if s.leaseLeft() > 0 || (s.state.Status != session.Up && s.state.Status != session.Suspended) {
		return // renewed since the timer was set, or nothing to lose
	}
	// lastReply is read now: s.state.LastReply is as of the state's last
	// change, the connection's, and a follower may have answered since.
	lastReply, _ := s.contact.snapshot()
	s.cfg.Logger.Warn("zkalloc: the ZooKeeper leader has not been heard from within the session lease; treating the session as lost",
		"session", fmt.Sprintf("%#x", s.state.SessionID), "leaseFrom", s.lease.anchor, "lastReply", lastReply)
	s.transition(session.Lost, s.state.SessionID, false)
}

// synced renews the lease with the answer to a request of the current
// session. If the lease had run out while the session stayed up on this
// connection (or resumed on a new one), and the answers now show it alive
// on the leader, the session is Up again: a new connection in the
// subscribers' eyes, which re-read what they hold.
func (s *Session) synced(r syncResult, client clientState) {
	if r.err != nil || r.session == 0 || r.session != s.state.SessionID {
		return
	}
	s.lease.answered(r.sent, r.committed)
	if s.state.Status == session.Lost && !s.state.Ended && s.leaseLeft() > 0 && client.State() == zk.StateHasSession && client.SessionID() == r.session {
		s.cfg.Logger.Info("zkalloc: the ZooKeeper leader answers again within the session lease", "session", fmt.Sprintf("%#x", r.session))
		s.state.Reconnects++
		s.transition(session.Up, r.session, false)
	}
}

// connect creates the client. zk.Connect only fails when it cannot resolve
// any server; that is retried with backoff until ctx ends, as a name may
// resolve later.
func (s *Session) connect(ctx context.Context) (*zk.Conn, <-chan zk.Event, error) {
	var client *zk.Conn
	var events <-chan zk.Event
	b := backoff.NewExponentialBackOff()
	b.MaxElapsedTime = 0 // never give up while the allocator runs
	b.MaxInterval = 10 * time.Second
	op := func() error {
		var err error
		client, events, err = zk.Connect(s.cfg.Servers, s.cfg.Timeout,
			zk.WithDialer(s.dial),
			zk.WithHostProvider(newHosts()),
			zk.WithEventCallback(s.events.push),
			zk.WithLogger(zkLogger{s.cfg.Logger}),
			zk.WithLogInfo(false),
			zk.WithMaxBufferSize(maxPacket),
		)
		if err != nil {
			s.failures.failed(fmt.Sprint(s.cfg.Servers), err)
		}
		return err
	}
	if err := backoff.Retry(op, backoff.WithContext(b, ctx)); err != nil {
		return nil, nil, fmt.Errorf("session: connect to %v: %w", s.cfg.Servers, err)
	}
	return client, events, nil
}

// maxPacket bounds what the client reads in one reply: ZooKeeper's own
// default jute.maxbuffer (1 MiB) plus room for headers. The server bounds
// the requests it accepts by it, not its replies: a list of children can
// be longer, and a reply that does not fit drops the connection, again on
// every retry. The partition set keeps its list of topics under half of
// it (partitions.MaxTopicsBytes), so that two members adding topics at
// the same moment, each up to that bound, still leave it readable.
const maxPacket = 1<<20 + 4096

func (s *Session) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	dialed := s.cfg.Clock.Now()
	c, err := s.cfg.Dialer(network, address, timeout)
	if err != nil {
		s.failures.failed(address, err)
		return nil, err
	}
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.closing {
		c.Close()
		return nil, errShuttingDown
	}
	for old := range s.conns { // the client has moved on from older connections
		delete(s.conns, old)
	}
	s.conns[c] = struct{}{}
	return &contactConn{
		Conn:      c,
		contact:   &s.contact,
		link:      s.link,
		gen:       s.link.dialed(),
		now:       s.cfg.Clock.Now,
		dialed:    dialed,
		handshake: time.Duration(handshakeFraction * float64(s.timeout())),
		logger:    s.cfg.Logger,
		server:    address,
		failures:  &s.failures,
		bigLogged: &s.bigLogged,
	}, nil
}

// timeout returns the session timeout the server last granted, or the one
// asked for before any server has granted one. The server clamps the one
// asked for into its bounds, so the two can differ either way.
func (s *Session) timeout() time.Duration {
	if _, granted := s.contact.snapshot(); granted > 0 {
		return granted
	}
	return s.cfg.Timeout
}

// Bounds on the steps of shutdown; see [Session.shutdown]. They measure
// real time, not the injected clock: they bound waits on the real client.
const (
	drainTimeout = time.Second            // for requests in flight to finish
	closeTimeout = 500 * time.Millisecond // for the client to stop by itself after Close (which itself waits up to 1s for the server)
	stopTimeout  = 5 * time.Second        // for it to stop once its connection is cut
)

// shutdown closes the client and waits until its goroutines have exited,
// which the client signals by closing its event channel. It first lets the
// requests in flight finish (refusing new ones) so that none races with
// Close, then closes the client, which sends the server a close-session
// request (our ephemeral nodes go at once). A client that has not stopped
// soon after, because the server does not answer, has its connection cut
// by closing our side of it. Every wait is bounded: a client still running
// after all of them is logged and left behind rather than hanging Close.
func (s *Session) shutdown(client *zk.Conn, gate *gatedConn, events <-chan zk.Event) {
	s.failures.stop()
	drained := time.NewTimer(drainTimeout)
	defer drained.Stop()
	select {
	case <-gate.shutdown():
	case <-drained.C:
	}
	client.Close()
	if waitClosed(events, closeTimeout) {
		return
	}
	s.connsMu.Lock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	s.connsMu.Unlock()
	if !waitClosed(events, stopTimeout) {
		s.cfg.Logger.Error("zkalloc: ZooKeeper client did not stop; leaving it behind")
	}
}

// waitClosed drains events until it is closed, for at most d, and reports
// whether it was.
func waitClosed(events <-chan zk.Event, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

// apply updates the state for one client event, and reports whether a
// connection now holds the session (a connect response created or
// resumed it). Events are hints: the session ID is read from the client,
// not from the event.
func (s *Session) apply(ev zk.Event, client clientState) (connected bool) {
	switch ev.State {
	case zk.StateHasSession:
		id := client.SessionID()
		if id == 0 {
			return false // already gone again; a later event tells what happened
		}
		created := id != s.state.SessionID
		if created && s.state.SessionID != 0 {
			s.ended() // replaced: the server gave us a new session
		}
		if created {
			s.lease.reset()
		}
		s.lease.connected(s.contact.dialedAt(), created)
		if s.state.Status == session.Lost && !created && s.leaseLeft() <= 0 {
			// The quorum lease: a resumed session's connect response is
			// no evidence until a check on this connection commits,
			// which synced then reports Up.
			return true
		}
		s.state.Reconnects++
		s.transition(session.Up, id, false)
		return true
	case zk.StateExpired:
		if s.state.SessionID != 0 {
			s.ended()
		}
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateAuthFailed:
		if s.state.Status == session.Up {
			s.transition(session.Suspended, s.state.SessionID, false)
		}
	}
	return false
}

// ended reports the current session Lost and ended on the server, unless
// that is already reported. A session whose lease ran out (Lost, not
// ended) is reported again: that it has now ended is news to subscribers
// that wait for it before they count its ephemeral nodes gone.
func (s *Session) ended() {
	if s.state.Status == session.Lost && s.state.Ended {
		return
	}
	s.transition(session.Lost, s.state.SessionID, true)
}

// transition publishes status to for session id; ended, with Lost, says
// the session has ended on the server (see [State.Ended]).
func (s *Session) transition(to session.Status, id int64, ended bool) {
	lastReply, granted := s.contact.snapshot()
	if granted > 0 {
		s.state.Timeout = granted
	}
	s.state.Status, s.state.SessionID, s.state.LastReply = to, id, lastReply
	s.state.Ended = to == session.Lost && ended
	s.failures.setUp(to == session.Up)
	s.state.Since = s.cfg.Clock.Now()
	switch {
	case to == session.Up:
		// State.Reconnects counts every time the session came up, the
		// first included; the log, like Stats.Reconnects, counts the
		// times after the first.
		s.cfg.Logger.Info("zkalloc: ZooKeeper session up", "session", fmt.Sprintf("%#x", id), "timeout", s.state.Timeout, "reconnects", max(s.state.Reconnects, 1)-1)
		s.logGranted(id)
	case s.state.Ended:
		s.cfg.Logger.Warn("zkalloc: ZooKeeper session lost: it has ended on the server", "session", fmt.Sprintf("%#x", id))
	default:
		s.cfg.Logger.Warn("zkalloc: ZooKeeper session "+to.String(), "session", fmt.Sprintf("%#x", id))
	}
	s.publish(s.state)
}

// logGranted warns, once per session, that the server granted session id
// another timeout than the one asked for: it clamps the request to its
// bounds (by default 2 and 20 ticks), which changes how soon a lost
// member's partitions move, and how long a restarted one waits for its
// name.
func (s *Session) logGranted(id int64) {
	if s.grantLog == id || s.state.Timeout == s.cfg.Timeout {
		return
	}
	s.grantLog = id
	s.cfg.Logger.Warn("zkalloc: ZooKeeper granted another session timeout than the one asked for (the server's minSessionTimeout and maxSessionTimeout bound it)",
		"session", fmt.Sprintf("%#x", id), "requested", s.cfg.Timeout, "granted", s.state.Timeout)
}

// leaseLeft is how long the session may still be alive on the leader, by
// the lease; zero or less once it may have expired.
func (s *Session) leaseLeft() time.Duration {
	return s.lease.end(s.timeout()).Sub(s.cfg.Clock.Now())
}

func (s *Session) publish(st State) {
	for _, l := range s.subs {
		l.Set(st)
	}
}

// eventQueue hands client events from the client's goroutine to Run
// without ever blocking that goroutine and without dropping an event.
type eventQueue struct {
	mu     sync.Mutex
	queued []zk.Event
	wake   chan struct{}
}

func newEventQueue() eventQueue {
	// One slot: push records "there is something to drain" without
	// blocking, and a pending wake-up is never lost.
	return eventQueue{wake: make(chan struct{}, 1)}
}

// push is the client's event callback. It keeps session events only.
func (q *eventQueue) push(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	q.mu.Lock()
	q.queued = append(q.queued, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) drain() []zk.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.queued
	q.queued = nil
	return evs
}

// zkLogger sends the client's own log lines to slog at debug level; the
// session reports what matters itself.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zk: " + fmt.Sprintf(format, args...))
}

// errShuttingDown refuses new connections once shutdown has begun.
var errShuttingDown = errors.New("session: shutting down")

// errFenced refuses to write a request of an earlier session on a
// connection of a later one; see [link].
var errFenced = fmt.Errorf("session: request of an ended session not sent: %w", zk.ErrConnectionClosed)
