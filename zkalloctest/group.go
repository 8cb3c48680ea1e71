package zkalloctest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures a [Group]. Every field is optional.
type Config struct {
	// Partitions is the group's shared set at first, as in
	// zkalloc.Config.Partitions.
	Partitions map[string][]int32
	// Strategy computes the assignment; default
	// [rebalance.StickyStrategy], as in zkalloc: its agreed record is
	// kept in the group (see [Group.Drain]).
	Strategy rebalance.Strategy
	// Settle, ReleaseTimeout, DisconnectGrace and DepartureDelay are
	// those of zkalloc.Config, with the same defaults; each member's
	// Allocator runs with them. A short ReleaseTimeout tests a consumer
	// that does not ack. With DepartureDelay, a member that leaves
	// ([Member.Close], [Member.Crash], [Member.LoseSession]) keeps its
	// seat: its partitions are nobody's and nobody else's move until it
	// joins again under the same name (and gets the same ones back) or
	// the delay runs out (and the others take them over). Until then the
	// group has not converged.
	Settle          time.Duration
	ReleaseTimeout  time.Duration
	DisconnectGrace time.Duration
	DepartureDelay  time.Duration
	// Weights are members' weights (zkalloc.Config.Weight) by name; a
	// member not named weighs 1. Only the sticky strategy has weights.
	Weights map[string]int
	// Logger receives the members' logs; default none.
	Logger *slog.Logger
}

// Group is an in-memory consumer group: what ZooKeeper holds for a real
// one (the members, their seats, the shared partition set and the
// ownership claims), kept in memory, and members that are real
// zkalloc Allocators keeping their group in it. Create it with
// [NewGroup] and add members with [Group.Join]. Its methods are safe for
// concurrent use.
type Group struct {
	cfg Config

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	zxid        int64         // counts changes, like ZooKeeper's
	membersZxid int64         // the last change to the member list
	seatsZxid   int64         // the last change to the seat list
	drainedZxid int64         // the last change to the drain marks
	partsZxid   int64         // the last change to the partition set
	lastSession int64
	parts       map[string][]int32
	partList    []zkalloc.Partition // parts, sorted
	registered  map[string]*Member  // the member nodes: by name, those with a session
	names       []string            // registered's names, sorted
	seats       map[string]int32    // the seat nodes (DepartureDelay): their versions
	drained     []string            // the drain marks, sorted
	record      record              // the sticky strategy's agreed record
	owners      map[zkalloc.Partition]claim
	running     map[string]*Member // joined and neither closed, crashed nor stopped
	closed      bool
}

// claim is a partition's ownership claim, an ephemeral node in a real
// group.
type claim struct {
	session int64 // its owner
	czxid   int64 // the zxid it was made at: its fencing token
}

// NewGroup returns a group whose shared set is cfg.Partitions, with no
// member. A bad Partitions or a negative duration is an error wrapping
// [zkalloc.ErrInvalidConfig].
func NewGroup(cfg Config) (*Group, error) {
	parts, err := partitions.Normalize(cfg.Partitions)
	if err != nil {
		return nil, fmt.Errorf("%w: Partitions: %w", zkalloc.ErrInvalidConfig, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Settle", cfg.Settle},
		{"ReleaseTimeout", cfg.ReleaseTimeout},
		{"DisconnectGrace", cfg.DisconnectGrace},
		{"DepartureDelay", cfg.DepartureDelay},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: %s %v: negative", zkalloc.ErrInvalidConfig, d.name, d.v)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Group{
		cfg:        cfg,
		changed:    make(chan struct{}),
		registered: make(map[string]*Member),
		seats:      make(map[string]int32),
		owners:     make(map[zkalloc.Partition]claim),
		running:    make(map[string]*Member),
	}
	g.setParts(parts)
	return g, nil
}

// Join starts a member named name and returns once its first Update is
// ready on [Member.Updates], like [zkalloc.Allocator.Start]: the member is
// a *zkalloc.Allocator, made by zkalloc.New with the group's Config and
// started, whose session, member list, partition set and claims are
// kept in the group. A name held by a running member is refused with an
// error wrapping [zkalloc.ErrDuplicateMember], and so is one whose
// member node another's session holds (a member that is closing); the
// name of a closed or crashed one may join again. A bad name is an error
// wrapping [zkalloc.ErrInvalidConfig]. A strategy that fails on the
// first view holds Join up, as it holds up Start; Config.Logger says
// why.
func (g *Group) Join(name string) (*Member, error) {
	m := &Member{g: g, name: name, states: actor.NewLatest[session.State](), done: make(chan struct{}), acked: true}
	// The in-memory backend is registered for this one zkalloc.New.
	server, unregister := seam.Register("zkalloctest", m.actors)
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:         []string{server},
		Group:           "zkalloctest",
		Member:          name,
		Strategy:        g.cfg.Strategy,
		Weight:          g.cfg.Weights[name],
		Settle:          g.cfg.Settle,
		ReleaseTimeout:  g.cfg.ReleaseTimeout,
		DisconnectGrace: g.cfg.DisconnectGrace,
		DepartureDelay:  g.cfg.DepartureDelay,
		Logger:          g.cfg.Logger,
	})
	unregister()
	if err != nil {
		return nil, err
	}
	m.alloc = alloc

	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, zkalloc.ErrClosed
	}
	if _, ok := g.running[name]; ok {
		g.mu.Unlock()
		return nil, fmt.Errorf("zkalloctest: join %q: %w", name, zkalloc.ErrDuplicateMember)
	}
	g.running[name] = m
	g.mu.Unlock()
	// (An Allocator that was never started has nothing to close.)

	if err := alloc.Start(context.Background()); err != nil {
		return nil, err // it has stopped, and left the running members
	}
	return m, nil
}

// Close stops every member still running as [Member.Crash] does, waiting
// for no ack, and returns once all their goroutines have exited. Join
// fails after it. It returns nil.
func (g *Group) Close() error {
	g.mu.Lock()
	g.closed = true
	ms := slices.Collect(maps.Values(g.running))
	g.mu.Unlock()
	for _, m := range ms {
		m.Crash()
	}
	return nil
}

// Owners returns who holds each partition's claim: the member whose
// consumer may work on it. A partition being handed over has no owner
// for a moment.
func (g *Group) Owners() map[zkalloc.Partition]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[zkalloc.Partition]string, len(g.owners))
	for p, c := range g.owners {
		for _, m := range g.registered {
			if m.st.SessionID == c.session {
				out[p] = m.name
			}
		}
	}
	return out
}

// Members returns the names of the members with a session, sorted: those
// the others compute the assignment for.
func (g *Group) Members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.names)
}

// WaitConverged waits until the group has converged and every consumer
// has caught up, and returns nil, or ctx's error: every member with a
// session has computed its assignment from the group's current members
// and partitions, has no Pending, and its consumer has received and
// acked its newest Update; and every partition of the set is in exactly
// one member's Assigned.
func (g *Group) WaitConverged(ctx context.Context) error {
	return g.wait(ctx, g.converged)
}

// converged is WaitConverged's condition; g.mu held.
func (g *Group) converged() bool {
	gen := max(g.membersZxid, g.seatsZxid, g.drainedZxid, g.partsZxid)
	for _, m := range g.running {
		if m.st.Status == session.Up && g.registered[m.name] != m {
			return false // its members actor is about to register it
		}
	}
	n := 0
	seen := make(map[zkalloc.Partition]bool, len(g.partList))
	for _, m := range g.registered {
		if m.stopping || m.st.Status != session.Up {
			return false
		}
		u := m.published
		if m.publishedN == 0 || u.Generation != gen || len(u.Pending) > 0 || !m.caughtUp() {
			return false
		}
		for _, p := range u.Assigned {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
		n += len(u.Assigned)
	}
	return n == len(g.partList)
}

// change records a change to the group and wakes every member; g.mu held.
func (g *Group) change() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// tick advances the zxid; g.mu held.
func (g *Group) tick() int64 {
	g.zxid++
	return g.zxid
}

// setParts makes parts the shared set; g.mu held (or g new).
func (g *Group) setParts(parts map[string][]int32) {
	g.parts = parts
	g.partList = g.partList[:0:0]
	for _, topic := range slices.Sorted(maps.Keys(parts)) {
		for _, id := range parts[topic] {
			g.partList = append(g.partList, zkalloc.Partition{Topic: topic, ID: id})
		}
	}
	g.partsZxid = g.tick()
}

// register adds m's member node and, with seats, creates its seat or
// bumps its version; g.mu held.
func (g *Group) register(m *Member, seats bool) {
	g.registered[m.name] = m
	g.names = slices.Sorted(maps.Keys(g.registered))
	g.membersZxid = g.tick()
	if seats {
		if v, ok := g.seats[m.name]; ok {
			g.seats[m.name] = v + 1 // the seat list is unchanged
		} else {
			g.seats[m.name] = 0
			g.seatsZxid = g.tick()
		}
	}
	g.change()
}

// unseat deletes the seat s.Name if it is still at s.Version (its member
// has not joined again since); g.mu held.
func (g *Group) unseat(s membership.Seat) {
	if v, ok := g.seats[s.Name]; !ok || v != s.Version {
		return
	}
	delete(g.seats, s.Name)
	g.seatsZxid = g.tick()
	g.change()
}

// memberView is the member list as a member whose session is st reads
// it, with the seats if it keeps them; g.mu held.
func (g *Group) memberView(st session.State, seats, sticky bool) membership.View {
	v := membership.View{Members: g.names, Zxid: g.membersZxid, SessionID: st.SessionID, Reconnects: st.Reconnects}
	if sticky {
		v.Zxid = max(v.Zxid, g.drainedZxid)
		v.Drained = g.drained
		for i, name := range g.names {
			if w := g.registered[name].weight; w != 1 {
				if v.Weights == nil {
					v.Weights = make([]int, len(g.names))
					for j := range v.Weights {
						v.Weights[j] = 1
					}
				}
				v.Weights[i] = w
			}
		}
	}
	if !seats {
		return v
	}
	v.Zxid = max(v.Zxid, g.seatsZxid)
	for _, name := range slices.Sorted(maps.Keys(g.seats)) {
		seat := membership.Seat{Name: name, Version: -1} // live: no version read
		if _, live := g.registered[name]; !live {
			seat.Version = g.seats[name]
		}
		v.Seats = append(v.Seats, seat)
	}
	return v
}

// expire deletes the nodes of m's session: its member node and claims;
// g.mu held.
func (g *Group) expire(m *Member, sid int64) {
	if sid == 0 {
		return
	}
	if g.registered[m.name] == m {
		delete(g.registered, m.name)
		g.names = slices.Sorted(maps.Keys(g.registered))
		g.membersZxid = g.tick()
	}
	for p, c := range g.owners {
		if c.session == sid {
			delete(g.owners, p)
		}
	}
	g.change()
}

// edit adds normalized parts to the shared set, or removes them; g.mu
// held.
func (g *Group) edit(remove bool, parts map[string][]int32) {
	next := maps.Clone(g.parts)
	for topic, ids := range parts {
		if remove {
			next[topic] = partitions.Subtract(next[topic], ids)
		} else {
			next[topic] = partitions.Union(next[topic], ids)
		}
		if len(next[topic]) == 0 {
			delete(next, topic)
		}
	}
	if maps.EqualFunc(next, g.parts, slices.Equal) {
		return
	}
	g.setParts(next)
	g.change()
}

// wait waits until cond, called with g.mu held, is true, or ctx ends.
func (g *Group) wait(ctx context.Context, cond func() bool) error {
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
