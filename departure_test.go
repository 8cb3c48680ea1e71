package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// seatMember is an allocator whose consumer keeps every Update it
// receives, with the time it received it.
type seatMember struct {
	name    string
	alloc   *zkalloc.Allocator
	mu      sync.Mutex
	updates []stampedUpdate
	done    chan struct{}
}

type stampedUpdate struct {
	u  zkalloc.Update
	at time.Time
}

func startSeatMember(tb testing.TB, cfg zkalloc.Config) *seatMember {
	tb.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	m := &seatMember{name: cfg.Member, alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			u.Ack()
			m.mu.Lock()
			m.updates = append(m.updates, stampedUpdate{u, time.Now()})
			m.mu.Unlock()
		}
	}()
	tb.Cleanup(func() { alloc.Close(); <-m.done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		tb.Fatalf("start %s: %v", cfg.Member, err)
	}
	return m
}

func (m *seatMember) close(tb testing.TB) {
	tb.Helper()
	if err := m.alloc.Close(); err != nil {
		tb.Errorf("Close %s: %v", m.name, err)
	}
	<-m.done
}

func (m *seatMember) latest() zkalloc.Update {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.updates) == 0 {
		return zkalloc.Update{}
	}
	return m.updates[len(m.updates)-1].u
}

// since returns the updates received from the k-th on.
func (m *seatMember) since(k int) []stampedUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.updates[k:])
}

func (m *seatMember) received() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.updates)
}

// settledOn returns what keeps ms from having received each an Update
// listing live as the members, nothing pending, and between them want
// assigned exactly once; "" if nothing.
func settledOn(ms []*seatMember, live []string, want []zkalloc.Partition) string {
	owner := map[zkalloc.Partition]string{}
	for _, m := range ms {
		u := m.latest()
		if !slices.Equal(u.Members, live) {
			return fmt.Sprintf("%s sees members %v, want %v", m.name, u.Members, live)
		}
		if len(u.Pending) > 0 {
			return fmt.Sprintf("%s has %d pending", m.name, len(u.Pending))
		}
		for _, p := range u.Assigned {
			if o, ok := owner[p]; ok {
				return fmt.Sprintf("%s assigned to %s and %s", p, o, m.name)
			}
			owner[p] = m.name
		}
	}
	if len(owner) != len(want) {
		return fmt.Sprintf("%d partitions assigned, want %d", len(owner), len(want))
	}
	for _, p := range want {
		if _, ok := owner[p]; !ok {
			return fmt.Sprintf("%s assigned to nobody", p)
		}
	}
	return ""
}

func TestDepartureDelayRestartMovesNothing(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	all := actortest.PartsN("t", 30)
	cfg := func(name string) zkalloc.Config {
		cfg := c.config(name, map[string][]int32{"t": ids(30)})
		cfg.DepartureDelay = delay
		return cfg
	}
	a, b, m := startSeatMember(t, cfg("a")), startSeatMember(t, cfg("b")), startSeatMember(t, cfg("c"))
	waitFor(t, testTimeout, func() string { return settledOn([]*seatMember{a, b, m}, []string{"a", "b", "c"}, all) })
	before := map[string][]zkalloc.Partition{"a": a.latest().Assigned, "b": b.latest().Assigned, "c": m.latest().Assigned}
	fromA, fromB := a.received(), b.received()

	// c restarts: while it is away its partitions are nobody's and the
	// others' stay as they were; back, it has exactly its own again.
	closed := time.Now()
	m.close(t)
	waitFor(t, testTimeout, func() string {
		for _, o := range []*seatMember{a, b} {
			if u := o.latest(); !slices.Equal(u.Members, []string{"a", "b"}) {
				return fmt.Sprintf("%s sees members %v, want c gone", o.name, u.Members)
			}
		}
		return ""
	})
	for _, o := range []*seatMember{a, b} {
		if got := without(o.latest().Assigned, before[o.name]...); len(got) > 0 {
			t.Fatalf("with c away, %s has taken %v over; want c's partitions paused", o.name, got)
		}
	}
	m = startSeatMember(t, cfg("c"))
	waitFor(t, testTimeout, func() string { return settledOn([]*seatMember{a, b, m}, []string{"a", "b", "c"}, all) })
	if away := time.Since(closed); away >= delay {
		t.Fatalf("c was away %v, longer than the delay %v: the test proves nothing", away, delay)
	}
	if got := m.latest().Assigned; !slices.Equal(got, before["c"]) {
		t.Errorf("c back with %v, want its own %v", got, before["c"])
	}
	for o, k := range map[*seatMember]int{a: fromA, b: fromB} {
		unchanged(t, o, k, before[o.name])
	}

	// b leaves for good: a and c take its partitions over once the delay
	// has run out, not before.
	fromA, fromC := a.received(), m.received()
	closed = time.Now()
	b.close(t)
	waitFor(t, testTimeout+delay, func() string { return settledOn([]*seatMember{a, m}, []string{"a", "c"}, all) })
	took := time.Since(closed)
	switched := map[string]int64{} // the generation at which each first took one over
	for o, k := range map[*seatMember]int{a: fromA, m: fromC} {
		for _, s := range o.since(k) {
			g := without(s.u.Assigned, before[o.name]...)
			if len(g) == 0 {
				continue
			}
			if _, ok := switched[o.name]; !ok {
				switched[o.name] = s.u.Generation
			}
			if s.at.Sub(closed) < delay {
				t.Errorf("%s took %v over %v after b left, before the delay %v", o.name, g, s.at.Sub(closed), delay)
			}
		}
	}
	if len(switched) == 2 && switched["a"] != switched["c"] {
		t.Errorf("a and c switched at generations %d and %d, want one event", switched["a"], switched["c"])
	}
	t.Logf("b's partitions taken over %v after it left (delay %v)", took, delay)
}

func TestDepartureDelaySessionExpiryMovesNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	all := actortest.PartsN("t", 30)
	cfg := func(name string) zkalloc.Config {
		cfg := c.config(name, map[string][]int32{"t": ids(30)})
		cfg.DepartureDelay = 5 * time.Second
		return cfg
	}
	a, b, m := startSeatMember(t, cfg("a")), startSeatMember(t, cfg("b")), startSeatMember(t, cfg("c"))
	ms := []*seatMember{a, b, m}
	waitFor(t, testTimeout, func() string { return settledOn(ms, []string{"a", "b", "c"}, all) })
	before := map[string][]zkalloc.Partition{"a": a.latest().Assigned, "b": b.latest().Assigned}
	fromA, fromB, fromC := a.received(), b.received(), m.received()

	// c's session expires: its node goes, and it joins again in a new
	// session; a and b are never disturbed, and c gets its own back.
	id, passwd := zkalloc.Credentials(m.alloc)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := zktest.ExpireSession(ctx, srv.Addr(), id, passwd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, testTimeout, func() string {
		if id2, _ := zkalloc.Credentials(m.alloc); id2 == id {
			return "c still in its old session"
		}
		return settledOn(ms, []string{"a", "b", "c"}, all)
	})
	var cLost bool
	for _, s := range m.since(fromC) {
		cLost = cLost || len(s.u.Revoked) > 0
	}
	if !cLost {
		t.Errorf("c never revoked its partitions when its session expired")
	}
	for o, k := range map[*seatMember]int{a: fromA, b: fromB} {
		unchanged(t, o, k, before[o.name])
	}
}

// Members with different delays disagree while a seat is kept: the one
// without a delay computes over the live members only. The claims keep
// that safe, and the group converges once the seat goes.
func TestDepartureDelayMismatchedIsSafe(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	all := actortest.PartsN("t", 30)
	cfg := func(name string, d time.Duration) zkalloc.Config {
		cfg := c.config(name, map[string][]int32{"t": ids(30)})
		cfg.DepartureDelay = d
		return cfg
	}
	a, b, m := startSeatMember(t, cfg("a", delay)), startSeatMember(t, cfg("b", 0)), startSeatMember(t, cfg("c", delay))
	waitFor(t, testTimeout, func() string { return settledOn([]*seatMember{a, b, m}, []string{"a", "b", "c"}, all) })

	closed := time.Now()
	m.close(t)
	waitFor(t, testTimeout+delay, func() string {
		// Never two owners, at any of the looks.
		owner := map[zkalloc.Partition]string{}
		for _, o := range []*seatMember{a, b} {
			for _, p := range o.alloc.Current().Assigned {
				if other, ok := owner[p]; ok {
					t.Fatalf("%s assigned to both %s and %s", p, other, o.name)
				}
				owner[p] = o.name
			}
		}
		return settledOn([]*seatMember{a, b}, []string{"a", "b"}, all)
	})
	if took := time.Since(closed); took < delay {
		t.Errorf("converged %v after c left, before a's delay of %v deleted its seat", took, delay)
	}
}

// unchanged checks that o took no partition over since its k-th Update,
// and ends with own. A connection blip of its own (it revokes its own and
// takes them back) moves nothing to another member, and passes.
func unchanged(t *testing.T, o *seatMember, k int, own []zkalloc.Partition) {
	t.Helper()
	for _, s := range o.since(k) {
		if g := without(s.u.Assigned, own...); len(g) > 0 {
			t.Errorf("%s took %v over (%s); want only its own %v", o.name, g, s.u.Reason, own)
		}
	}
	if got := o.latest().Assigned; !slices.Equal(got, own) {
		t.Errorf("%s has %v, want its own %v", o.name, got, own)
	}
}

func TestDepartureDelayRefusesNegative(t *testing.T) {
	t.Parallel()
	_, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "m", DepartureDelay: -time.Second})
	if !errors.Is(err, zkalloc.ErrInvalidConfig) || !strings.Contains(err.Error(), "DepartureDelay") {
		t.Errorf("New with a negative DepartureDelay: %v, want ErrInvalidConfig naming the field", err)
	}
}

// BenchmarkRollingRestart restarts every member of a group of 10, one at
// a time, and reports how many partitions moved: the Added in the Updates
// of the members that were not restarting (moved/rollout), and in every
// member's (added/rollout, which counts each restarted member taking its
// own back). Without DepartureDelay the others take a leaver's partitions
// over before it is back, as with any restart slower than the group's
// convergence; with it, the restarted member is back within the delay.
//
//	go test -run XXX -bench RollingRestart -benchtime 1x .
func BenchmarkRollingRestart(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{})
	for _, s := range []rebalance.Strategy{rebalance.Balanced, rebalance.RoundRobin} {
		for _, delay := range []time.Duration{0, 30 * time.Second} {
			b.Run(fmt.Sprintf("%s/members=10/partitions=200/delay=%v", s.Name(), delay), func(b *testing.B) {
				benchRollingRestart(b, srv.Addr(), s, delay)
			})
		}
	}
}

func benchRollingRestart(b *testing.B, addr string, s rebalance.Strategy, delay time.Duration) {
	const members, partitions = 10, 200
	all := actortest.PartsN("t", partitions)
	names := make([]string, members)
	for i := range names {
		names[i] = fmt.Sprintf("m%02d", i)
	}
	var moved, added int
	for n := range b.N {
		group := fmt.Sprintf("rolling-%s-%v-%d", s.Name(), delay, n)
		cfg := func(name string) zkalloc.Config {
			return zkalloc.Config{
				Servers:        []string{addr},
				Group:          group,
				Member:         name,
				Partitions:     map[string][]int32{"t": ids(partitions)},
				SessionTimeout: sessionTimeout,
				DepartureDelay: delay,
				Strategy:       s,
				Logger:         testLogger(),
			}
		}
		ms := make([]*seatMember, members)
		for i, name := range names {
			ms[i] = startSeatMember(b, cfg(name))
		}
		settle := func(ms []*seatMember, live []string) {
			waitFor(b, testTimeout, func() string { return settledOn(ms, live, all) })
		}
		settle(ms, names)
		for i, name := range names {
			others := slices.Delete(slices.Clone(ms), i, i+1)
			from := make([]int, len(others))
			for j, o := range others {
				from[j] = o.received()
			}
			ms[i].close(b)
			if delay == 0 {
				// Restarts take longer than the group takes to converge.
				settle(others, slices.Delete(slices.Clone(names), i, i+1))
			}
			ms[i] = startSeatMember(b, cfg(name))
			settle(ms, names)
			for j, o := range others {
				for _, s := range o.since(from[j]) {
					moved += len(s.u.Added)
				}
			}
			added += len(ms[i].latest().Assigned)
		}
		for _, m := range ms {
			m.close(b)
		}
	}
	b.ReportMetric(float64(moved)/float64(b.N), "moved/rollout")
	b.ReportMetric(float64(moved+added)/float64(b.N), "added/rollout")
}
