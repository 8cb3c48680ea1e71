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
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// Config configures a [Group]. Every field is optional.
type Config struct {
	// Partitions is the group's shared set at first, as in
	// zkalloc.Config.Partitions.
	Partitions map[string][]int32
	// Strategy computes the assignment; default [rebalance.Balanced], as
	// in zkalloc.
	Strategy rebalance.Strategy
	// Settle, ReleaseTimeout and DisconnectGrace are those of
	// zkalloc.Config, with the same defaults. A short ReleaseTimeout
	// tests a consumer that does not ack.
	Settle          time.Duration
	ReleaseTimeout  time.Duration
	DisconnectGrace time.Duration
	// Logger receives the members' logs; default none.
	Logger *slog.Logger
}

// Group is an in-memory consumer group: what ZooKeeper holds for a real
// one (the members, the shared partition set and the ownership claims),
// kept in memory, and members that run zkalloc's own decisions and
// hand-off on it. Create it with [NewGroup] and add members with
// [Group.Join]. Its methods are safe for concurrent use.
type Group struct {
	cfg Config

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	zxid        int64         // counts changes, like ZooKeeper's
	membersZxid int64         // the last change to the member list
	partsZxid   int64         // the last change to the partition set
	lastSession int64
	parts       map[string][]int32
	partList    []zkalloc.Partition // parts, sorted
	registered  map[string]*Member  // the member nodes: by name, those with a session
	names       []string            // registered's names, sorted
	owners      map[zkalloc.Partition]claim
	running     map[string]*Member // joined and neither closed nor crashed
	closed      bool
}

// claim is a partition's ownership claim, an ephemeral node in a real
// group.
type claim struct {
	session int64 // its owner
	czxid   int64 // the zxid it was made at: its fencing token
}

// NewGroup returns a group whose shared set is cfg.Partitions, with no
// member. A bad Partitions is an error wrapping [zkalloc.ErrInvalidConfig].
func NewGroup(cfg Config) (*Group, error) {
	parts, err := partitions.Normalize(cfg.Partitions)
	if err != nil {
		return nil, fmt.Errorf("%w: Partitions: %w", zkalloc.ErrInvalidConfig, err)
	}
	if cfg.Strategy == nil {
		cfg.Strategy = rebalance.Balanced
	}
	if cfg.ReleaseTimeout <= 0 {
		cfg.ReleaseTimeout = zkalloc.DefaultReleaseTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Group{
		cfg:        cfg,
		changed:    make(chan struct{}),
		registered: make(map[string]*Member),
		owners:     make(map[zkalloc.Partition]claim),
		running:    make(map[string]*Member),
	}
	g.setParts(parts)
	return g, nil
}

// Join starts a member named name and returns once its first Update is
// ready on [Member.Updates], like [zkalloc.Allocator.Start]. A name held
// by a running member is refused with an error wrapping
// [zkalloc.ErrDuplicateMember]; the name of a closed or crashed one may
// join again. A strategy that fails on the first view holds Join up, as
// it holds up Start; Config.Logger says why.
func (g *Group) Join(name string) (*Member, error) {
	if err := rebalance.ValidateName(name); err != nil {
		return nil, fmt.Errorf("%w: Member: %w", zkalloc.ErrInvalidConfig, err)
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, zkalloc.ErrClosed
	}
	if _, ok := g.running[name]; ok {
		g.mu.Unlock()
		return nil, fmt.Errorf("zkalloctest: join %q: %w", name, zkalloc.ErrDuplicateMember)
	}
	m := newMember(g, name)
	g.running[name] = m
	g.mu.Unlock()

	m.start()
	m.connect(false)
	select {
	case <-m.act.Ready():
		return m, nil
	case <-m.done:
		return nil, zkalloc.ErrClosed
	}
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
	gen := max(g.membersZxid, g.partsZxid)
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

// register adds m's member node; g.mu held.
func (g *Group) register(m *Member) {
	g.registered[m.name] = m
	g.names = slices.Sorted(maps.Keys(g.registered))
	g.membersZxid = g.tick()
	g.change()
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

// edit adds parts to the shared set, or removes them.
func (g *Group) edit(remove bool, parts map[string][]int32) error {
	norm, err := partitions.Normalize(parts)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := maps.Clone(g.parts)
	for topic, ids := range norm {
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
		return nil
	}
	g.setParts(next)
	g.change()
	return nil
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
