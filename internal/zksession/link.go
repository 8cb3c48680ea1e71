package zksession

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// link holds requests back while the client's connection is not ready for
// them, as read off the wire by the connection's contactConn. The client
// (v1.0.4) sends whatever was queued the moment a new connection is up,
// which does harm twice:
//
//   - After the server expired the session, the queued requests run in the
//     new session. A release that read a claim as ours in the old session
//     and then deletes it by version could delete another member's claim
//     of the same version.
//   - While a resumed session is re-sending its watches, the client reads
//     the last zxid it saw, unsynchronized, as replies to those requests
//     update it: a data race (go-zookeeper/zk#35, open since 2020), which
//     fails any test run with -race that reconnects with watches set.
//
// So a request waits here, not in the client, from the moment a connection
// fails until the next one is ready: its handshake is answered and, if the
// session resumed with watches set, the client has written the request
// that re-sends them (or resumeWait has passed, in case every watch had
// fired). A request that waited for a session that has since ended fails
// with zk.ErrSessionExpired instead of running in the next one.
//
// That leaves the requests that went to the client in the instant its
// connection failed, or while the connection was jammed: the client queues
// them (up to 16, then their callers block) and sends them on its next
// connection. If that connection holds a new session, they are fenced off:
// the link counts the requests it let through per session, and while any
// let through in an earlier session has not returned, the link stays
// closed and the connection refuses to write a request (see
// [contactConn.Write]). The client then fails that request with
// zk.ErrConnectionClosed and dials again, once per such request. A closed
// link lets no request through, so whatever is written meanwhile is of an
// earlier session.
type link struct {
	resent  atomic.Uint64 // the last connection whose watches were re-sent; see synced
	mu      sync.Mutex
	gen     uint64        // the client's current connection, counted from 1
	open    bool          // requests may go to the client
	changed chan struct{} // closed, and replaced, whenever open or session changes
	session int64         // the session of the last connect response; 0 before the first
	expired bool          // the server said session is gone; no new one yet
	watched bool          // a watch was set in session
	timer   *time.Timer   // opens a resumed link if the watches are not re-sent; stopped by closeLocked
	waiting int           // requests waiting, for tests
	inside  int           // requests let through in session that have not returned
	stale   int           // requests let through in earlier sessions that have not returned
	answer  uint64        // the connection whose connect response granted session; 0 once it ends
}

// resumeWait bounds the wait for a resumed session's watches to be re-sent;
// it only matters when every watch set in the session had already fired,
// so that there are none to re-send.
const resumeWait = 500 * time.Millisecond

func newLink() *link { return &link{changed: make(chan struct{})} }

// dialed notes a new connection and returns its number.
func (l *link) dialed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.closeLocked()
	return l.gen
}

// ended notes that connection gen failed or was closed.
func (l *link) ended(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		l.answer = 0
		l.closeLocked()
	}
}

// connected notes the connect response of connection gen: the session it
// holds, 0 if the server has expired ours.
func (l *link) connected(gen uint64, session int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	switch {
	case session == 0:
		l.expired = true // the client dials again for a new session
		l.broadcastLocked()
		return
	case session != l.session:
		l.session, l.expired, l.watched = session, false, false
		l.stale += l.inside
		l.inside = 0
		l.broadcastLocked() // requests waiting in the old session fail
	}
	l.answer = gen
	switch {
	case l.stale > 0:
		// done opens the link once the last request of an earlier
		// session has returned; meanwhile no watch is set in this one.
	case !l.watched:
		l.openLocked() // none to re-send, or a new session: the client dropped the old one's watches
	default:
		// The timer's function only takes mu and may open the link for
		// gen; one still pending when the session shuts down runs once,
		// finds its connection gone or the gate refusing requests, and ends.
		l.timer = time.AfterFunc(resumeWait, func() { l.rewatched(gen) })
	}
}

// wrote notes a request written on connection gen and reports whether it
// may go out: not if it was let through in an earlier session (see
// [link]). The client's own requests, which do not pass the link, go out:
// pings, watches re-sent, credentials and the close of the session.
func (l *link) wrote(gen uint64, xid, opcode int32) bool {
	switch {
	case opcode == opSetWatches:
		l.resent.Store(gen)
		l.rewatched(gen)
		return true
	case opcode == opClose || opcode == opSetAuth || xid < 0:
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stale == 0
}

// synced is called by the client's reading goroutine after each read. It
// gives the race detector the order that the network gives: the client
// reads its last zxid before it re-sends the watches, wrote stores resent
// before that request goes out, and a reply that updates the zxid arrives
// after it (the requests held back go out later still). Without an atomic
// load here the detector sees no order between the two and reports the
// race even when the reply came long after.
func (l *link) synced() uint64 { return l.resent.Load() }

// Opcodes of requests the client makes by itself: re-sending a session's
// watches, its credentials, and closing the session.
const (
	opSetWatches = 101
	opSetAuth    = 100
	opClose      = -11
)

// rewatched opens connection gen's link once its watches are re-sent.
func (l *link) rewatched(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen && !l.open && l.session != 0 && !l.expired && l.stale == 0 {
		l.openLocked()
	}
}

// watch notes that a watch was set.
func (l *link) watch() {
	l.mu.Lock()
	l.watched = true
	l.mu.Unlock()
}

// wait returns once a request may go to the client, with the session it
// goes in; the caller passes that to done when the request returns. It
// fails with zk.ErrClosing once stop is closed, or zk.ErrSessionExpired if
// the session it started waiting in has ended.
func (l *link) wait(stop <-chan struct{}) (int64, error) {
	l.mu.Lock()
	session := l.session
	for {
		if session != 0 && (l.session != session || l.expired) {
			l.mu.Unlock()
			return 0, zk.ErrSessionExpired
		}
		if l.open {
			l.inside++
			session = l.session // the first, if it waited for one
			l.mu.Unlock()
			return session, nil
		}
		changed := l.changed
		l.waiting++
		l.mu.Unlock()
		select {
		case <-changed:
		case <-stop:
			l.mu.Lock()
			l.waiting--
			l.mu.Unlock()
			return 0, zk.ErrClosing
		}
		l.mu.Lock()
		l.waiting--
	}
}

// done notes that a request wait let through in session has returned. The
// last of earlier sessions' requests to return opens the link if a
// connection holds the current session.
func (l *link) done(session int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if session == l.session {
		l.inside--
		return
	}
	l.stale--
	if l.stale == 0 && l.answer == l.gen && l.answer != 0 && !l.expired && !l.watched {
		l.openLocked()
	}
}

func (l *link) openLocked() {
	l.open = true
	l.broadcastLocked()
}

func (l *link) closeLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.open {
		l.open = false
		l.broadcastLocked()
	}
}

func (l *link) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}
