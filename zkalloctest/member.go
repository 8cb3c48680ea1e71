package zkalloctest

import (
	"context"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/session"
)

// Member is one member of a [Group]: a real *zkalloc.Allocator, started,
// whose session, member list, partition set and claims are kept in the
// Group instead of ZooKeeper. Its consumer uses it as it would the
// Allocator: [Member.Updates], [Member.Current], [Member.Stats],
// [Member.AddPartitions], [Member.RemovePartitions] and [Member.Close],
// which are the Allocator's. The other methods are the test's: they fail
// the member in the ways a real one fails, and show what its consumer
// has acked. All are safe for concurrent use.
type Member struct {
	g      *Group
	name   string
	alloc  *zkalloc.Allocator
	states *actor.Latest[session.State] // the session's states, for the Allocator's loop
	done   chan struct{}                // closed when the Allocator's session has ended: it has stopped

	// Set by actors, before the Allocator starts.
	timeout time.Duration // the session timeout asked for
	weight  int           // Config.Weight, 1 by default

	// Under g.mu.
	st         session.State
	stopping   bool           // Close or Crash was called, or the Allocator stopped
	failure    error          // set by Fail: the members actor returns it
	published  zkalloc.Update // the newest Update
	publishedN int            // how many were published
	received   zkalloc.Update // the newest Update the consumer received
	receivedN  int            // how many it received
	receivedOf int            // publishedN when it received the newest
	acked      bool           // it acked the newest one received
}

// Updates delivers this member's assignment: [zkalloc.Allocator.Updates].
// It is closed once the member has stopped.
func (m *Member) Updates() <-chan zkalloc.Update { return m.alloc.Updates() }

// Current returns the newest Update: [zkalloc.Allocator.Current].
func (m *Member) Current() zkalloc.Update { return m.alloc.Current() }

// Stats returns a snapshot of the member's state and counters:
// [zkalloc.Allocator.Stats].
func (m *Member) Stats() zkalloc.Stats { return m.alloc.Stats() }

// AddPartitions merges partitions into the group's shared set:
// [zkalloc.Allocator.AddPartitions]. It waits for this member to have a
// session, until ctx ends.
func (m *Member) AddPartitions(ctx context.Context, parts map[string][]int32) error {
	return m.alloc.AddPartitions(ctx, parts)
}

// RemovePartitions takes partitions out of the group's shared set:
// [zkalloc.Allocator.RemovePartitions].
func (m *Member) RemovePartitions(ctx context.Context, parts map[string][]int32) error {
	return m.alloc.RemovePartitions(ctx, parts)
}

// Close leaves the group gracefully: [zkalloc.Allocator.Close]. A final
// Update revokes every partition, and the member keeps their claims
// until its consumer has acked it (at most ReleaseTimeout after Close);
// then its session ends, and the others take over (with DepartureDelay,
// once the delay has run out). Call it while the consumer still reads
// Updates. It closes Updates, and returns the error that stopped the
// member, if one did before (see [Member.Fail]), or one wrapping
// context.DeadlineExceeded if the consumer did not ack in time.
func (m *Member) Close() error {
	m.stop()
	return m.alloc.Close()
}

// Shutdown is Close waiting for the consumer's ack until ctx ends:
// [zkalloc.Allocator.Shutdown]. When ctx ends first, the session ends at
// once, the others take over, and it returns an error wrapping ctx's.
func (m *Member) Shutdown(ctx context.Context) error {
	m.stop()
	return m.alloc.Shutdown(ctx)
}

// Crash stops the member as if its process died: its session ends at
// once with its member node and claims (as if its timeout had passed),
// with no drain and no ack awaited. Updates is closed, possibly after an
// Update revoking everything. The others take over at once (with
// DepartureDelay, once the delay has run out).
func (m *Member) Crash() {
	if m.stop() {
		m.endSession(session.Closed)
	}
	_ = m.alloc.Close() // a crash has nobody to tell
}

// Fail stops the member on err as the Allocator stops on a fatal error,
// such as its name taken by another process ([zkalloc.ErrDuplicateMember])
// or a request refused by an ACL ([zkalloc.ErrNoAuth]): its members actor
// returns err. As in production, its consumer gets a final Update that
// revokes everything, the claims are kept until it acks it (at most
// ReleaseTimeout), Updates is closed, and [Member.Close] returns an error
// wrapping err. It does nothing if the member is stopping already.
func (m *Member) Fail(err error) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.stopping || m.failure != nil {
		return
	}
	m.failure = err
	g.change()
}

// stop marks the member stopping; it reports whether it was running.
func (m *Member) stop() bool {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	return m.stopLocked()
}

// stopLocked is stop; g.mu held.
func (m *Member) stopLocked() bool {
	if m.stopping {
		return false
	}
	m.stopping = true
	if m.g.running[m.name] == m {
		delete(m.g.running, m.name)
	}
	m.g.change()
	return true
}

// connect gives the member a new session, or (reconnect) a new connection
// of its session.
func (m *Member) connect(reconnect bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.stopping {
		return
	}
	if !reconnect {
		g.lastSession++
		m.st = session.State{SessionID: g.lastSession, Reconnects: m.st.Reconnects, Timeout: m.timeout}
	}
	// As the real session counts, every connection, resumed or new.
	m.st.Reconnects++
	m.st.Status, m.st.Since = session.Up, time.Now()
	g.change()
	m.states.Set(m.st)
}

// endSession ends the member's session with status: its nodes go.
func (m *Member) endSession(status session.Status) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	m.endSessionLocked(status)
}

// endSessionLocked is endSession; g.mu held.
func (m *Member) endSessionLocked(status session.Status) {
	sid := m.st.SessionID
	m.st = session.State{Status: status, Reconnects: m.st.Reconnects, Since: time.Now()}
	m.g.expire(m, sid)
	m.states.Set(m.st)
}

// LoseSession makes the member's session expire, as after a partition
// from ZooKeeper longer than its timeout: the member revokes every
// partition at once, without waiting for its consumer, and then its member
// node and claims are deleted, so that the others take over. The member
// stays without a session until [Member.RegainSession].
func (m *Member) LoseSession() {
	g := m.g
	g.mu.Lock()
	if m.stopping || m.st.SessionID == 0 {
		g.mu.Unlock()
		return
	}
	sid := m.st.SessionID
	m.st.Status, m.st.Since = session.Lost, time.Now()
	m.states.Set(m.st)
	g.mu.Unlock()
	// As the real session's lease does, revoke before the server expires
	// the session: no two members list a partition at once.
	_ = g.wait(context.Background(), func() bool { return m.stopping || len(m.published.Assigned) == 0 }) // no deadline: it cannot fail
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.st.SessionID != sid {
		return // ended meanwhile
	}
	m.st.SessionID = 0
	g.expire(m, sid)
	// Now the session has ended, not only its lease: say so, as the real
	// session does once the server has expired it.
	m.states.Set(session.State{Status: session.Lost, SessionID: sid, Reconnects: m.st.Reconnects, Since: time.Now(), Ended: true})
}

// RegainSession gives the member a new session after
// [Member.LoseSession]: it joins the group again and reclaims. It does
// nothing if the member has a session.
func (m *Member) RegainSession() {
	g := m.g
	g.mu.Lock()
	has := m.st.SessionID != 0
	g.mu.Unlock()
	if !has {
		m.connect(false)
	}
}

// Disconnect loses the member's connection but not its session, as a
// short network blip does: its member node and claims stay, and it
// revokes every partition, at once or after DisconnectGrace.
// [Member.Reconnect] ends the blip.
func (m *Member) Disconnect() {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.stopping || m.st.Status != session.Up {
		return
	}
	m.st.Status, m.st.Since = session.Suspended, time.Now()
	g.change()
	m.states.Set(m.st)
}

// Reconnect ends a [Member.Disconnect]: the member's session is up again.
func (m *Member) Reconnect() {
	g := m.g
	g.mu.Lock()
	suspended := m.st.Status == session.Suspended
	g.mu.Unlock()
	if suspended {
		m.connect(true)
	}
}

// Received returns the newest Update the consumer received from
// Updates, and how many it has received.
func (m *Member) Received() (zkalloc.Update, int) {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.received, m.receivedN
}

// Acked reports whether the consumer has caught up: it has received the
// newest Update from Updates and acked it, and the member has seen the
// ack (true before the first Update). Until then, the partitions that
// Update revoked stay with this member (at most ReleaseTimeout), and the
// members they go to list them in Pending.
func (m *Member) Acked() bool {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	return m.caughtUp()
}

// caughtUp is Acked's condition; g.mu held.
func (m *Member) caughtUp() bool {
	return m.publishedN == 0 || m.receivedOf == m.publishedN && m.acked
}

// WaitAcked waits until [Member.Acked] and returns nil, or returns ctx's
// error, or [zkalloc.ErrClosed] if the member stops first.
func (m *Member) WaitAcked(ctx context.Context) error {
	for {
		m.g.mu.Lock()
		acked, ch := m.caughtUp(), m.g.changed
		m.g.mu.Unlock()
		if acked {
			return nil
		}
		select {
		case <-ch:
		case <-m.done:
			if m.Acked() {
				return nil
			}
			return zkalloc.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Name returns the member's name.
func (m *Member) Name() string { return m.name }
