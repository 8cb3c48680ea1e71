package zkalloctest

import (
	"context"
	"fmt"
	"slices"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// The in-memory actors of a Member's Allocator: what its ZooKeeper actors
// do, on the Group's state. Each reads the member's session state under
// g.mu and wakes on the group's changes.

// actors is the backend of m's Allocator (see package seam): zkalloc.New
// calls it once, before anything runs.
func (m *Member) actors(cfg seam.Config) seam.Actors {
	m.timeout = cfg.SessionTimeout
	m.weight = cfg.Weight
	var assigner seam.Assigner
	if cfg.Sticky {
		assigner = &recordAssigner{m: m}
	}
	return seam.Actors{
		Assigner: assigner,
		Session:  &sessionActor{m: m},
		Members: &membersActor{
			m:      m,
			seats:  cfg.Seats,
			sticky: cfg.Sticky,
			out:    actor.NewOutbox[membership.View](),
			expire: actor.NewLatest[[]membership.Seat](),
		},
		Partitions: &partitionsActor{
			m:    m,
			seed: cfg.Seed,
			out:  actor.NewOutbox[partitions.View](),
			done: make(chan struct{}),
		},
		Claims: &claimsActor{
			m:    m,
			want: actor.NewLatest[decision.Want](),
			held: actor.NewLatest[decision.Held](),
		},
		Observer: observer{m},
	}
}

// sessionActor stands for the session: a new session when it starts;
// the test's calls change it meanwhile (Member.LoseSession and the
// like); and when the Allocator stops it, once drained, the session
// closes, and its member node and claims go.
type sessionActor struct{ m *Member }

func (s *sessionActor) Run(ctx context.Context) error {
	defer s.m.finish()
	if ctx.Err() != nil {
		return nil // closed before it started
	}
	s.m.connect(false)
	<-ctx.Done()
	return nil
}

func (s *sessionActor) Observe() *actor.Latest[session.State] { return s.m.states }

func (s *sessionActor) Failure() (up bool, err error) {
	g := s.m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	return s.m.st.Status == session.Up, nil
}

// finish ends the member once its Allocator has stopped: it is no longer
// running, and its session is closed.
func (m *Member) finish() {
	g := m.g
	g.mu.Lock()
	m.stopLocked()
	if m.st.Status != session.Closed {
		m.endSessionLocked(session.Closed)
	}
	g.mu.Unlock()
	close(m.done)
}

// membersActor stands for the members actor: it registers the member
// (and its seat) in every session, refusing a name another session
// holds, deletes the seats the loop asks it to, and publishes the member
// list.
type membersActor struct {
	m      *Member
	seats  bool
	sticky bool // its views carry the weights and drain marks
	out    *actor.Outbox[membership.View]
	expire *actor.Latest[[]membership.Seat]
}

func (a *membersActor) Views() <-chan membership.View { return a.out.C() }

func (a *membersActor) Expire(seats []membership.Seat) { a.expire.Set(slices.Clone(seats)) }

func (a *membersActor) Run(ctx context.Context) error {
	defer a.out.Close()
	m, g := a.m, a.m.g
	var last membership.View
	var have bool
	var expire []membership.Seat
	for {
		g.mu.Lock()
		if err := m.failure; err != nil {
			g.mu.Unlock()
			return err
		}
		st := m.st
		if st.Status == session.Up && g.registered[m.name] != m {
			if other := g.registered[m.name]; other != nil {
				g.mu.Unlock()
				return fmt.Errorf("zkalloctest: member %q: %w", m.name, zkalloc.ErrDuplicateMember)
			}
			g.register(m, a.seats)
		}
		if st.Status == session.Up {
			for _, s := range expire {
				if s.Name != m.name {
					g.unseat(s)
				}
			}
			expire = nil
			if v := g.memberView(st, a.seats, a.sticky); !have || !v.Equal(last) {
				a.out.Put(v)
				last, have = v, true
			}
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		case <-a.expire.Changed():
			if seats, ok := a.expire.Take(); ok {
				expire = seats
			}
		case a.out.Send() <- a.out.Pending():
			a.out.Sent()
		}
	}
}

// partitionsActor stands for the set actor: it merges the seed in the
// first session, publishes the shared set, and changes it.
type partitionsActor struct {
	m    *Member
	seed map[string][]int32 // nil once merged
	out  *actor.Outbox[partitions.View]
	done chan struct{} // closed when Run returns
}

func (p *partitionsActor) Views() <-chan partitions.View { return p.out.C() }

func (p *partitionsActor) Run(ctx context.Context) error {
	defer close(p.done)
	defer p.out.Close()
	g := p.m.g
	var last partitions.View
	var have bool
	for {
		g.mu.Lock()
		if st := p.m.st; st.Status == session.Up {
			if len(p.seed) > 0 {
				g.edit(false, p.seed)
			}
			p.seed = nil
			v := partitions.View{Partitions: g.partList, Zxid: g.partsZxid, SessionID: st.SessionID, Reconnects: st.Reconnects}
			if !have || !v.Equal(last) {
				p.out.Put(v)
				last, have = v, true
			}
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
		case p.out.Send() <- p.out.Pending():
			p.out.Sent()
		}
	}
}

func (p *partitionsActor) Add(ctx context.Context, topics map[string][]int32) error {
	return p.change(ctx, false, topics)
}

func (p *partitionsActor) Remove(ctx context.Context, topics map[string][]int32) error {
	return p.change(ctx, true, topics)
}

// change edits the set once the member has a session, as the set actor
// writes it.
func (p *partitionsActor) change(ctx context.Context, remove bool, topics map[string][]int32) error {
	norm, err := partitions.Normalize(topics)
	if err != nil {
		return err
	}
	if len(norm) == 0 {
		return nil
	}
	g := p.m.g
	for {
		select {
		case <-p.done:
			return actor.ErrClosed
		default:
		}
		g.mu.Lock()
		up, ch := p.m.st.Status == session.Up, g.changed
		if up {
			g.edit(remove, norm)
		}
		g.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ch:
		case <-p.done:
			return actor.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// claimsActor stands for the claims actor: it holds the claims the loop
// wants, each as soon as no other session holds it, gives up the others,
// and reports what it holds. The claims are the session's: they stay
// when Run returns, until the session ends.
type claimsActor struct {
	m    *Member
	want *actor.Latest[decision.Want]
	held *actor.Latest[decision.Held]
}

func (c *claimsActor) Want() *actor.Latest[decision.Want] { return c.want }
func (c *claimsActor) Held() *actor.Latest[decision.Held] { return c.held }

func (c *claimsActor) Run(ctx context.Context) error {
	m, g := c.m, c.m.g
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
			for p, cl := range g.owners {
				if cl.session == sid && !want[p] {
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
			for p, cl := range g.owners {
				if cl.session == sid {
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
				c.held.Set(h)
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
		case <-c.want.Changed():
			if v, ok := c.want.Take(); ok {
				d, have = v, true
			}
		}
	}
}

// observer follows the member's loop and consumer, for Member.Acked,
// Member.Received and Group.WaitConverged.
type observer struct{ m *Member }

func (o observer) Published(u zkalloc.Update) {
	g := o.m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	o.m.published, o.m.publishedN = u, o.m.publishedN+1
	g.change()
}

func (o observer) Received(u zkalloc.Update, acked bool) {
	g := o.m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	// The outbox holds only the newest Update: the one received is the
	// newest published.
	o.m.received, o.m.acked, o.m.receivedOf = u, acked, o.m.publishedN
	o.m.receivedN++
	g.change()
}

func (o observer) Acked() {
	g := o.m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	o.m.acked = true
	g.change()
}

// The in-memory actors are what the Allocator's seam takes.
var (
	_ seam.Session    = (*sessionActor)(nil)
	_ seam.Members    = (*membersActor)(nil)
	_ seam.Partitions = (*partitionsActor)(nil)
	_ seam.Claims     = (*claimsActor)(nil)
	_ seam.Assigner   = (*recordAssigner)(nil)
	_ seam.Observer   = observer{}
)
