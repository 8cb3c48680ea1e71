package zkalloctest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/zkalloctest"
)

// consumer is a test consumer: it runs what its Updates assign, checks
// that no partition runs on two consumers of its group at once (when
// strict), and acks every Update; but while hold is set it holds the ack
// of a revocation until the test sends on ack, and while noAck is set it
// acks nothing.
type consumer struct {
	t      *testing.T
	name   string
	shared *runningOn
	hold   atomic.Bool         // hold the acks of revocations until ack
	noAck  atomic.Bool         // ack nothing
	held   chan zkalloc.Update // the revocations held or not acked
	seen   chan zkalloc.Update // every Update, while there is room
	ack    chan struct{}       // releases one held ack
	quit   chan struct{}       // closed when the test ends
	done   chan struct{}       // closed when Updates has closed

	mu      sync.Mutex
	running map[zkalloc.Partition]bool
}

// runningOn is which consumer runs each partition, across a group.
type runningOn struct {
	mu     sync.Mutex
	strict bool // a partition may not run on two consumers at once
	on     map[zkalloc.Partition]string
	t      *testing.T
}

func newRunningOn(t *testing.T, strict bool) *runningOn {
	r := &runningOn{t: t, strict: strict, on: make(map[zkalloc.Partition]string)}
	t.Cleanup(func() { // before the group closes: it crashes its members
		r.mu.Lock()
		r.strict = false
		r.mu.Unlock()
	})
	return r
}

func (r *runningOn) start(name string, p zkalloc.Partition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if other, ok := r.on[p]; ok && r.strict {
		r.t.Errorf("%s starts %v while %s runs it", name, p, other)
	}
	r.on[p] = name
}

func (r *runningOn) stop(name string, p zkalloc.Partition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on[p] == name {
		delete(r.on, p)
	}
}

var debug = false

// joinConsume joins a member named name to g and starts a consumer of
// its Updates, whose partitions shared tracks across the group.
func joinConsume(t *testing.T, g *zkalloctest.Group, name string, shared *runningOn) (*zkalloctest.Member, *consumer) {
	t.Helper()
	m := join(t, g, name)
	c := &consumer{
		t: t, name: m.Name(), shared: shared,
		held:    make(chan zkalloc.Update, 16),
		seen:    make(chan zkalloc.Update, 256),
		ack:     make(chan struct{}),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		running: make(map[zkalloc.Partition]bool),
	}
	go c.run(m.Updates())
	t.Cleanup(func() { close(c.quit) })
	return m, c
}

func (c *consumer) run(updates <-chan zkalloc.Update) {
	defer close(c.done)
	for u := range updates {
		if debug {
			c.t.Logf("%s got gen %d members %v assigned %v added %v revoked %v pending %v (%s)", c.name, u.Generation, u.Members, u.Assigned, u.Added, u.Revoked, u.Pending, u.Reason)
		}
		select {
		case c.seen <- u:
		default:
		}
		c.mu.Lock()
		for _, p := range u.Revoked {
			if !c.running[p] {
				c.t.Errorf("%s: %v revoked but not running", c.name, p)
			}
			delete(c.running, p)
			c.shared.stop(c.name, p)
		}
		// Start before the ack: once the group has converged, every
		// consumer runs what it was given.
		for _, p := range u.Added {
			c.running[p] = true
			c.shared.start(c.name, p)
		}
		if len(c.running) != len(u.Assigned) {
			c.t.Errorf("%s: runs %d partitions, Assigned has %d", c.name, len(c.running), len(u.Assigned))
		}
		c.mu.Unlock()
		switch {
		case c.noAck.Load():
			if len(u.Revoked) > 0 && !c.handOver(u) {
				return
			}
		case c.hold.Load() && len(u.Revoked) > 0:
			if !c.handOver(u) {
				return
			}
			select {
			case <-c.ack:
			case <-c.quit:
				return
			}
			u.Ack()
		default:
			u.Ack()
		}
	}
}

// handOver puts u on held for the test; it reports false if the test
// ended first.
func (c *consumer) handOver(u zkalloc.Update) bool {
	select {
	case c.held <- u:
		return true
	case <-c.quit:
		return false
	}
}

func (c *consumer) runs() []zkalloc.Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []zkalloc.Partition
	for p := range c.running {
		out = append(out, p)
	}
	rebalance.Sort(out)
	return out
}

func (c *consumer) nextHeld(ctx context.Context) zkalloc.Update {
	c.t.Helper()
	select {
	case u := <-c.held:
		return u
	case <-ctx.Done():
		c.t.Fatalf("%s: no revocation held", c.name)
	}
	panic("unreachable")
}

func (c *consumer) wait(ctx context.Context) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-ctx.Done():
		c.t.Fatalf("%s: Updates not closed", c.name)
	}
}

func ids(topic string, n int32) map[string][]int32 {
	var out []int32
	for i := range n {
		out = append(out, i)
	}
	return map[string][]int32{topic: out}
}

func newGroup(t *testing.T, cfg zkalloctest.Config) (*zkalloctest.Group, context.Context) {
	t.Helper()
	g, err := zkalloctest.NewGroup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	t.Cleanup(func() { g.Close() })
	return g, ctx
}

func join(t *testing.T, g *zkalloctest.Group, name string) *zkalloctest.Member {
	t.Helper()
	m, err := g.Join(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func converge(t *testing.T, ctx context.Context, g *zkalloctest.Group) {
	t.Helper()
	if err := g.WaitConverged(ctx); err != nil {
		t.Fatalf("group did not converge: %v; owners %v", err, g.Owners())
	}
}

// assigned returns what each consumer runs, and checks that every
// partition of want runs on exactly one.
func checkRuns(t *testing.T, want int, cs ...*consumer) {
	t.Helper()
	seen := map[zkalloc.Partition]string{}
	for _, c := range cs {
		for _, p := range c.runs() {
			if other, ok := seen[p]; ok {
				t.Errorf("%v runs on %s and %s", p, other, c.name)
			}
			seen[p] = c.name
		}
	}
	if len(seen) != want {
		t.Errorf("%d partitions run, want %d: %v", len(seen), want, seen)
	}
}

func TestThreeMembersHandOffWhenOneCloses(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 12)})
	shared := newRunningOn(t, true)
	a, ca := joinConsume(t, g, "a", shared)
	b, cb := joinConsume(t, g, "b", shared)
	c, cc := joinConsume(t, g, "c", shared)
	converge(t, ctx, g)
	checkRuns(t, 12, ca, cb, cc)
	mine := a.Current().Assigned
	if len(mine) != 4 {
		t.Fatalf("a has %v, want 4 of 12", mine)
	}

	ca.hold.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	final := ca.nextHeld(ctx)
	if len(final.Assigned) != 0 || !slices.Equal(final.Revoked, mine) {
		t.Fatalf("a's final Update: Assigned %v, Revoked %v; want none and %v", final.Assigned, final.Revoked, mine)
	}
	// Until a's consumer acks, its partitions stay with it.
	if a.Acked() {
		t.Error("a.Acked before its consumer acked the final Update")
	}
	owners := g.Owners()
	for _, p := range mine {
		if owners[p] != "a" {
			t.Errorf("%v is owned by %q before a acked, want a", p, owners[p])
		}
	}
	for _, m := range []*zkalloctest.Member{b, c} {
		for _, p := range m.Current().Assigned {
			if slices.Contains(mine, p) {
				t.Errorf("%s is assigned %v before a acked", m.Name(), p)
			}
		}
	}
	if got := g.Members(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("members while a drains: %v", got)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the consumer acked", err)
	default:
	}

	ca.ack <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	ca.wait(ctx)
	converge(t, ctx, g)
	checkRuns(t, 12, cb, cc)
	if got := g.Members(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("members after a closed: %v", got)
	}
	if n := len(b.Current().Assigned) + len(c.Current().Assigned); n != 12 {
		t.Errorf("b and c have %d partitions, want 12", n)
	}
}

func TestPendingUntilPreviousOwnerAcks(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4)})
	shared := newRunningOn(t, true)
	a, ca := joinConsume(t, g, "a", shared)
	converge(t, ctx, g)
	ca.hold.Store(true)

	b, cb := joinConsume(t, g, "b", shared)
	u := ca.nextHeld(ctx)
	if len(u.Revoked) != 2 {
		t.Fatalf("a revoked %v, want 2", u.Revoked)
	}
	if a.Acked() {
		t.Error("a.Acked before its consumer acked")
	}
	cur := b.Current()
	if len(cur.Assigned) != 0 || !slices.Equal(cur.Pending, u.Revoked) {
		t.Errorf("b before a acked: Assigned %v, Pending %v; want none and %v", cur.Assigned, cur.Pending, u.Revoked)
	}

	ca.ack <- struct{}{}
	if err := a.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, g)
	if cur := b.Current(); !slices.Equal(cur.Assigned, u.Revoked) || len(cur.Pending) != 0 {
		t.Errorf("b after a acked: Assigned %v, Pending %v; want %v and none", cur.Assigned, cur.Pending, u.Revoked)
	}
	checkRuns(t, 4, ca, cb)
}

func TestCrashHandsOverWithoutAck(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 12)})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	_, cb := joinConsume(t, g, "b", shared)
	_, cc := joinConsume(t, g, "c", shared)
	converge(t, ctx, g)

	ca.noAck.Store(true)
	a.Crash()
	ca.wait(ctx)
	converge(t, ctx, g)
	checkRuns(t, 12, cb, cc)
	if got := g.Members(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("members after a crashed: %v", got)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close after Crash: %v", err)
	}
	if _, err := g.Join("a"); err != nil {
		t.Errorf("a crashed member's name cannot join again: %v", err)
	}
}

func TestLostSessionRevokesAndRejoins(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 6)})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	b, cb := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	ca.noAck.Store(true) // the session's end waits for no ack

	a.LoseSession()
	u := ca.nextHeld(ctx)
	if len(u.Assigned) != 0 || len(u.Revoked) != 3 {
		t.Errorf("a after losing its session: Assigned %v, Revoked %v; want none and 3", u.Assigned, u.Revoked)
	}
	converge(t, ctx, g)
	if got := b.Current().Assigned; len(got) != 6 {
		t.Errorf("b has %v, want all 6", got)
	}
	if got := g.Members(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("members: %v", got)
	}
	// It waits for a session, until ctx ends.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.AddPartitions(ended, ids("t", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("AddPartitions without a session: %v, want it to wait for one", err)
	}

	ca.noAck.Store(false)
	a.RegainSession()
	converge(t, ctx, g)
	checkRuns(t, 6, ca, cb)
	if n := len(a.Current().Assigned); n != 3 {
		t.Errorf("a has %d partitions after regaining its session, want 3", n)
	}
}

func TestDisconnectKeepsClaims(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4)})
	shared := newRunningOn(t, true)
	a, ca := joinConsume(t, g, "a", shared)
	_, cb := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	mine := a.Current().Assigned

	ca.hold.Store(true)
	a.Disconnect()
	u := ca.nextHeld(ctx)
	if len(u.Assigned) != 0 || !slices.Equal(u.Revoked, mine) {
		t.Errorf("a disconnected: Assigned %v, Revoked %v; want none and %v", u.Assigned, u.Revoked, mine)
	}
	ca.hold.Store(false)
	ca.ack <- struct{}{}
	if err := a.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	// Its session lives: its claims stay, and b does not take them.
	owners := g.Owners()
	for _, p := range mine {
		if owners[p] != "a" {
			t.Errorf("%v owned by %q while a is disconnected, want a", p, owners[p])
		}
	}
	a.Reconnect()
	converge(t, ctx, g)
	if got := a.Current().Assigned; !slices.Equal(got, mine) {
		t.Errorf("a after reconnecting: %v, want %v", got, mine)
	}
	checkRuns(t, 4, ca, cb)
}

func TestAddAndRemovePartitions(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 2)})
	shared := newRunningOn(t, true)
	a, ca := joinConsume(t, g, "a", shared)
	b, cb := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)

	if err := a.AddPartitions(ctx, map[string][]int32{"u": {0, 1, 2, 3}, "t": {2, 3}}); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, g)
	checkRuns(t, 8, ca, cb)

	if err := b.RemovePartitions(ctx, map[string][]int32{"t": {0, 1, 2, 3, 9}}); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, g)
	checkRuns(t, 4, ca, cb)
	for _, m := range []*zkalloctest.Member{a, b} {
		for _, p := range m.Current().Assigned {
			if p.Topic != "u" {
				t.Errorf("%s still has %v", m.Name(), p)
			}
		}
	}

	if err := a.AddPartitions(ctx, map[string][]int32{"bad/topic": {1}}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("AddPartitions with a bad topic: %v", err)
	}
	a.Close()
	if err := a.AddPartitions(ctx, ids("t", 1)); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("AddPartitions after Close: %v, want ErrClosed", err)
	}
}

func TestJoinRefusesDuplicatesAndBadConfig(t *testing.T) {
	if _, err := zkalloctest.NewGroup(zkalloctest.Config{Partitions: map[string][]int32{"t": {-1}}}); !errors.Is(err, zkalloc.ErrInvalidConfig) {
		t.Errorf("NewGroup with a negative ID: %v", err)
	}
	g, _ := newGroup(t, zkalloctest.Config{Partitions: ids("t", 2)})
	a := join(t, g, "a")
	if _, err := g.Join("a"); !errors.Is(err, zkalloc.ErrDuplicateMember) {
		t.Errorf("second a: %v, want ErrDuplicateMember", err)
	}
	if _, err := g.Join("a/b"); !errors.Is(err, zkalloc.ErrInvalidConfig) {
		t.Errorf("bad name: %v, want ErrInvalidConfig", err)
	}
	go func() {
		for u := range a.Updates() {
			u.Ack()
		}
	}()
	g.Close()
	if _, ok := <-a.Updates(); ok {
		t.Error("Updates not closed after the group closed")
	}
	if _, err := g.Join("b"); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("Join after Close: %v, want ErrClosed", err)
	}
}

// Many members join and leave at once; every partition ends up run once.
func TestChurn(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 64)})
	shared := newRunningOn(t, true)
	var cs []*consumer
	var ms []*zkalloctest.Member
	for i := range 8 {
		m, c := joinConsume(t, g, fmt.Sprintf("m%d", i), shared)
		ms = append(ms, m)
		cs = append(cs, c)
	}
	var wg sync.WaitGroup
	for _, m := range ms[:4] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close()
		}()
	}
	wg.Wait()
	converge(t, ctx, g)
	checkRuns(t, 64, cs[4:]...)
}

// A consumer that never acks holds its revoked partitions up for
// ReleaseTimeout only.
func TestReleaseTimeoutWithoutAck(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4), ReleaseTimeout: 100 * time.Millisecond})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	converge(t, ctx, g)
	ca.noAck.Store(true)

	began := time.Now()
	b, cb := joinConsume(t, g, "b", shared)
	u := ca.nextHeld(ctx)
	if len(u.Revoked) != 2 {
		t.Fatalf("a revoked %v, want 2", u.Revoked)
	}
	for {
		select {
		case got := <-cb.seen:
			if len(got.Pending) == 0 && slices.Equal(got.Assigned, u.Revoked) {
				if took := time.Since(began); took < 100*time.Millisecond {
					t.Errorf("b had a's partitions after %v, before ReleaseTimeout", took)
				}
				if a.Acked() {
					t.Error("a acked")
				}
				return
			}
		case <-ctx.Done():
			t.Fatalf("b did not get %v after ReleaseTimeout; it has %v", u.Revoked, b.Current())
		}
	}
}

// Fencing tokens: a partition's next owner has a larger token than the
// previous one, which keeps its own while it owns the partition.
func TestTokensGrowWithEachOwner(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4)})
	shared := newRunningOn(t, false)
	a, _ := joinConsume(t, g, "a", shared)
	b, _ := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	before := map[zkalloc.Partition]int64{}
	for _, m := range []*zkalloctest.Member{a, b} {
		u := m.Current()
		for _, p := range u.Assigned {
			tok, ok := u.Token(p)
			if !ok || tok <= 0 {
				t.Fatalf("%s: no token for %v", m.Name(), p)
			}
			before[p] = tok
		}
		if _, ok := u.Token(zkalloc.Partition{Topic: "t", ID: 99}); ok {
			t.Errorf("%s: a token for a partition not assigned", m.Name())
		}
	}
	moved := a.Current().Assigned
	a.Crash()
	converge(t, ctx, g)
	u := b.Current()
	for _, p := range u.Assigned {
		tok, _ := u.Token(p)
		switch {
		case slices.Contains(moved, p) && tok <= before[p]:
			t.Errorf("%v: b's token %d, not above a's %d", p, tok, before[p])
		case !slices.Contains(moved, p) && tok != before[p]:
			t.Errorf("%v: b's token changed from %d to %d while it kept it", p, before[p], tok)
		}
	}
}

// A member whose session has ended has no claims to hand over: Close
// returns without waiting for an ack, however long ReleaseTimeout is.
func TestCloseAfterLostSessionEndsAtOnce(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4), ReleaseTimeout: time.Hour})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	converge(t, ctx, g)
	ca.noAck.Store(true)
	a.LoseSession()
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close after LoseSession: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close after LoseSession waits for an ack the ended session cannot need")
	}
}

// Shutdown with a context that has already ended does not wait for the
// consumer, which never acks: the member's session ends at once, and b
// takes its partitions, however long ReleaseTimeout is.
func TestShutdownExpiredContextHandsOverAtOnce(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4), ReleaseTimeout: time.Hour})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	b, _ := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	ca.noAck.Store(true)
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- a.Shutdown(expired) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown(expired ctx) = %v, want ctx's error", err)
		}
	case <-ctx.Done():
		t.Fatal("Shutdown(expired ctx) waits for an ack")
	}
	eventually(t, ctx, "b owns every partition", func() bool { return len(b.Current().Assigned) == 4 })
}
