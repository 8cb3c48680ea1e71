package zkalloctest

import (
	"context"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Member is one member of a [Group]. Its consumer uses it as it would a
// started *zkalloc.Allocator: [Member.Updates], [Member.Current],
// [Member.AddPartitions], [Member.RemovePartitions] and [Member.Close].
// The other methods are the test's: they fail the member in the ways a
// real one fails, and show what its consumer has acked. All are safe for
// concurrent use.
//
// Inside, the member runs zkalloc's own member loop (its decisions and
// hand-off, unchanged); the session, the member list, the partition set
// and the claims, which ZooKeeper would hold, come from the Group.
type Member struct {
	g       *Group
	name    string
	act     seam.Member
	sess    *actor.Latest[session.State]
	desired *actor.Latest[decision.Want]
	held    *actor.Latest[decision.Held]
	views   chan membership.View
	parts   chan partitions.View
	ctx     context.Context // the member's goroutines run until it ends
	cancel  context.CancelFunc
	done    chan struct{} // closed when every goroutine of the member has returned

	// Under g.mu.
	st         session.State
	stopping   bool           // Close or Crash was called
	published  zkalloc.Update // the newest Update
	publishedN int            // how many were published
	received   zkalloc.Update // the newest Update the consumer received
	receivedN  int            // how many it received
	receivedOf int            // publishedN when it received the newest
	acked      bool           // it acked the newest one received
}

func newMember(g *Group, name string) *Member {
	m := &Member{
		g:       g,
		name:    name,
		sess:    actor.NewLatest[session.State](),
		desired: actor.NewLatest[decision.Want](),
		held:    actor.NewLatest[decision.Held](),
		views:   make(chan membership.View),
		parts:   make(chan partitions.View),
		done:    make(chan struct{}),
		acked:   true,
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.act = seam.NewMember(seam.MemberConfig{
		Member:          name,
		Strategy:        g.cfg.Strategy,
		Settle:          g.cfg.Settle,
		ReleaseTimeout:  g.cfg.ReleaseTimeout,
		DisconnectGrace: g.cfg.DisconnectGrace,
		Session:         m.sess,
		Members:         m.views,
		Partitions:      m.parts,
		Want:            m.desired,
		Held:            m.held,
		Logger:          g.cfg.Logger.With("member", name),
		Published: func(u zkalloc.Update) {
			g.mu.Lock()
			m.published, m.publishedN = u, m.publishedN+1
			g.change()
			g.mu.Unlock()
		},
		Received: func(u zkalloc.Update, acked bool) {
			g.mu.Lock()
			// The outbox holds only the newest Update: the one received
			// is the newest published.
			m.received, m.acked, m.receivedOf = u, acked, m.publishedN
			m.receivedN++
			g.change()
			g.mu.Unlock()
		},
		Acked: func() {
			g.mu.Lock()
			m.acked = true
			g.change()
			g.mu.Unlock()
		},
	})
	return m
}

// start runs the member's actors until m.cancel.
func (m *Member) start() {
	var group actor.Group
	group.Add("rebalance", m.act)
	group.Add("views", actor.Func(m.feed))
	group.Add("claims", actor.Func(m.claim))
	go func() {
		defer close(m.done)
		group.Run(m.ctx)
	}()
}

// connect gives the member a new session, or (reconnect) a new connection
// of its session, and registers it.
func (m *Member) connect(reconnect bool) {
	g := m.g
	g.mu.Lock()
	if m.stopping {
		g.mu.Unlock()
		return
	}
	if reconnect {
		m.st.Reconnects++
	} else {
		g.lastSession++
		m.st = session.State{SessionID: g.lastSession, Timeout: 10 * time.Second}
	}
	m.st.Status, m.st.Since = session.Up, time.Now()
	if g.registered[m.name] != m {
		g.register(m)
	}
	g.change()
	st := m.st
	g.mu.Unlock()
	m.sess.Set(st)
}

// Updates delivers this member's assignment, as
// [zkalloc.Allocator.Updates] does. It is closed once the member has
// stopped.
func (m *Member) Updates() <-chan zkalloc.Update { return m.act.Updates() }

// Current returns the newest Update, as [zkalloc.Allocator.Current] does.
func (m *Member) Current() zkalloc.Update {
	u, _ := m.act.Current()
	return u
}

// AddPartitions merges partitions into the group's shared set, as
// [zkalloc.Allocator.AddPartitions] does: it waits for this member to
// have a session, until ctx ends.
func (m *Member) AddPartitions(ctx context.Context, parts map[string][]int32) error {
	if err := m.awaitSession(ctx); err != nil {
		return err
	}
	return m.g.edit(false, parts)
}

// RemovePartitions takes partitions out of the group's shared set, as
// [zkalloc.Allocator.RemovePartitions] does.
func (m *Member) RemovePartitions(ctx context.Context, parts map[string][]int32) error {
	if err := m.awaitSession(ctx); err != nil {
		return err
	}
	return m.g.edit(true, parts)
}

func (m *Member) awaitSession(ctx context.Context) error {
	stopped := false
	err := m.g.wait(ctx, func() bool {
		stopped = m.stopping
		return stopped || m.st.Status == session.Up
	})
	if stopped {
		return zkalloc.ErrClosed
	}
	return err
}

// Close leaves the group gracefully, as [zkalloc.Allocator.Close] does:
// a final Update revokes every partition, and the member keeps their
// claims until its consumer has acked it (at most ReleaseTimeout); then
// its session ends, and the others take over. Call it while the consumer
// still reads Updates. It returns nil, and closes Updates.
func (m *Member) Close() error {
	if !m.stop() {
		<-m.done
		return nil
	}
	m.cancel()
	<-m.done
	m.endSession(session.Closed)
	return nil
}

// Crash stops the member as if its process died: its session ends at
// once with its member node and claims (as if its timeout had passed),
// with no drain and no ack awaited. Updates is closed, possibly after an
// Update revoking everything. The others take over at once.
func (m *Member) Crash() {
	if !m.stop() {
		<-m.done
		return
	}
	m.endSession(session.Closed)
	m.cancel()
	<-m.done
}

// stop marks the member stopping; it reports whether it was running.
func (m *Member) stop() bool {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.stopping {
		return false
	}
	m.stopping = true
	delete(g.running, m.name)
	g.change()
	return true
}

// endSession ends the member's session with status: its nodes go.
func (m *Member) endSession(status session.Status) {
	g := m.g
	g.mu.Lock()
	sid := m.st.SessionID
	m.st = session.State{Status: status, Since: time.Now()}
	st := m.st
	g.expire(m, sid)
	g.mu.Unlock()
	m.sess.Set(st)
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
	st := m.st
	g.mu.Unlock()
	m.sess.Set(st)
	// As the real session's lease does, revoke before the server expires
	// the session: no two members list a partition at once.
	g.wait(context.Background(), func() bool { return m.stopping || len(m.published.Assigned) == 0 })
	g.mu.Lock()
	ended := m.st.SessionID == sid
	if ended {
		m.st.SessionID, m.st.Reconnects = 0, 0
	}
	g.expire(m, sid)
	// Now the session has ended, not only its lease: say so, as the real
	// session does once the server has expired it.
	// (Set under the lock: a RegainSession must not be overtaken.)
	if ended {
		m.sess.Set(session.State{Status: session.Lost, SessionID: sid, Since: time.Now(), Ended: true})
	}
	g.mu.Unlock()
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
	if m.stopping || m.st.Status != session.Up {
		g.mu.Unlock()
		return
	}
	m.st.Status, m.st.Since = session.Suspended, time.Now()
	st := m.st
	g.change()
	g.mu.Unlock()
	m.sess.Set(st)
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

// feed stands for the members and partset actors: it sends the
// member and partition views, read in the member's session, whenever they
// change.
func (m *Member) feed(ctx context.Context) error {
	g := m.g
	var lastV membership.View
	var lastP partitions.View
	var haveV, haveP bool
	for {
		var sendV chan<- membership.View
		var sendP chan<- partitions.View
		g.mu.Lock()
		ch := g.changed
		st := m.st
		v := membership.View{Members: g.names, Zxid: g.membersZxid, SessionID: st.SessionID, Reconnects: st.Reconnects}
		p := partitions.View{Partitions: g.partList, Zxid: g.partsZxid, SessionID: st.SessionID, Reconnects: st.Reconnects}
		registered := g.registered[m.name] == m
		g.mu.Unlock()
		if st.Status == session.Up && registered {
			if !haveV || !lastV.Equal(v) {
				sendV = m.views
			}
			if !haveP || !lastP.Equal(p) {
				sendP = m.parts
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		case sendV <- v:
			lastV, haveV = v, true
		case sendP <- p:
			lastP, haveP = p, true
		}
	}
}

// claim stands for the claims actor: it holds the claims the member
// actor wants, each as soon as no other session holds it, gives up the
// others, and reports what it holds.
func (m *Member) claim(ctx context.Context) error {
	g := m.g
	var d decision.Want
	var have bool
	var last decision.Held
	var reported bool
	for {
		g.mu.Lock()
		ch := g.changed
		if st := m.st; have && st.Status == session.Up {
			sid := st.SessionID
			want := make(map[zkalloc.Partition]bool, len(d.Partitions))
			if d.SessionID == sid {
				for _, p := range d.Partitions {
					want[p] = true
				}
			}
			changed := false
			for p, c := range g.owners {
				if c.session == sid && !want[p] {
					delete(g.owners, p)
					changed = true
				}
			}
			for _, p := range d.Partitions {
				if _, taken := g.owners[p]; want[p] && !taken {
					g.owners[p] = claim{session: sid, czxid: g.tick()}
					changed = true
				}
			}
			var held []zkalloc.Partition
			for p, c := range g.owners {
				if c.session == sid {
					held = append(held, p)
				}
			}
			rebalance.Sort(held)
			tokens := make([]int64, len(held))
			for i, p := range held {
				tokens[i] = g.owners[p].czxid
			}
			h := decision.Held{SessionID: sid, Reconnects: st.Reconnects, Seq: d.Seq, Partitions: held, Tokens: tokens}
			if !reported || h.SessionID != last.SessionID || h.Reconnects != last.Reconnects || h.Seq != last.Seq ||
				!slices.Equal(h.Partitions, last.Partitions) || !slices.Equal(h.Tokens, last.Tokens) {
				m.held.Set(h)
				last, reported = h, true
			}
			if changed {
				g.change()
			}
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		case <-m.desired.Changed():
			if v, ok := m.desired.Take(); ok {
				d, have = v, true
			}
		}
	}
}
