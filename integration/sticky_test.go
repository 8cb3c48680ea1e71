package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The checks of issue 27 on a real ZooKeeper, with the default
// configuration (the sticky strategy over the group's agreed record): over
// a sequence of every kind of change the partitions that change owner are
// exactly the minimum, every member stays within one of its share, and a
// rolling restart moves each restarted member's partitions away and back
// and nothing else (nothing at all with DepartureDelay).

// stickyMember is an in-process Allocator whose consumer acks at once and
// keeps every Update with the time it came.
type stickyMember struct {
	name    string
	weight  int
	alloc   *zkalloc.Allocator
	mu      sync.Mutex
	updates []timedUpdate
	done    chan struct{} // closed when Updates has closed
}

type timedUpdate struct {
	u  zkalloc.Update
	at time.Time
}

// startSticky makes and starts a member with cfg, its consumer running,
// and returns it with the time its Start was called. wake, if not nil,
// gets a value (or finds one there) whenever the consumer receives an
// Update.
func startSticky(t testing.TB, cfg zkalloc.Config, wake chan struct{}) (*stickyMember, time.Time) {
	t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &stickyMember{name: cfg.Member, weight: max(cfg.Weight, 1), alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			u.Ack()
			m.mu.Lock()
			m.updates = append(m.updates, timedUpdate{u, time.Now()})
			m.mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(m.close)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	began := time.Now()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return m, began
}

// close closes the member and waits for its consumer; closing twice does
// nothing more.
func (m *stickyMember) close() {
	m.alloc.Close()
	<-m.done
}

func (m *stickyMember) latest() timedUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.updates) == 0 {
		return timedUpdate{}
	}
	return m.updates[len(m.updates)-1]
}

// received returns how many Updates the consumer has received.
func (m *stickyMember) received() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.updates)
}

// since returns the Updates received from the k-th on.
func (m *stickyMember) since(k int) []timedUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.updates[k:])
}

// snapshot is a group's converged state: who owns each partition, and
// when the last member received the Update that shows it.
type snapshot struct {
	owner map[zkalloc.Partition]string
	last  time.Time
	gen   int64
}

// count returns how many partitions each member owns.
func (s snapshot) count() map[string]int {
	n := map[string]int{}
	for _, o := range s.owner {
		n[o]++
	}
	return n
}

// convergedOn returns the state of ms if each member's latest Update is of
// one generation, lists live as the members, has nothing pending, and
// between them they assign want exactly once; otherwise what is still
// wrong.
func convergedOn(ms []*stickyMember, live []string, want []zkalloc.Partition) (snapshot, string) {
	s := snapshot{owner: make(map[zkalloc.Partition]string, len(want))}
	for i, m := range ms {
		l := m.latest()
		u := l.u
		if i == 0 {
			s.gen = u.Generation
		}
		switch {
		case u.Generation != s.gen:
			return s, fmt.Sprintf("%s at generation %d, %s at %d", ms[0].name, s.gen, m.name, u.Generation)
		case !slices.Equal(u.Members, live):
			return s, fmt.Sprintf("%s sees members %v, want %v", m.name, u.Members, live)
		case len(u.Pending) > 0:
			return s, fmt.Sprintf("%s has %d pending", m.name, len(u.Pending))
		}
		for _, p := range u.Assigned {
			if o, ok := s.owner[p]; ok {
				return s, fmt.Sprintf("%s assigned to %s and %s", p, o, m.name)
			}
			s.owner[p] = m.name
		}
		if l.at.After(s.last) {
			s.last = l.at
		}
	}
	if len(s.owner) != len(want) {
		return s, fmt.Sprintf("%d partitions assigned, want %d", len(s.owner), len(want))
	}
	for _, p := range want {
		if _, ok := s.owner[p]; !ok {
			return s, fmt.Sprintf("%s assigned to nobody", p)
		}
	}
	return s, ""
}

// awaitSticky waits until ms have converged on live and want and extra
// (which may be nil) has nothing to say of the state, and returns it.
func awaitSticky(t testing.TB, wake <-chan struct{}, ms []*stickyMember, live []string, want []zkalloc.Partition, extra func(snapshot) string) snapshot {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		s, problem := convergedOn(ms, live, want)
		if problem == "" && extra != nil {
			problem = extra(s)
		}
		if problem == "" {
			return s
		}
		select {
		case <-wake:
		case <-time.After(pollInterval):
		case <-deadline:
			t.Fatalf("not converged within %v: %s", testTimeout, problem)
		}
	}
}

// minimumMoves computes, apart from the sticky function, the fewest
// partitions that must change owner going from prev to a group of
// members over parts, and each member's share (rebalance.Shares): the
// partitions that no member still taking a share holds, plus each
// member's excess over its share.
func minimumMoves(prev map[zkalloc.Partition]string, members []rebalance.Member, parts []zkalloc.Partition) (int, map[string]int, error) {
	active := map[string]bool{}
	for _, m := range members {
		active[m.Name] = m.Weight > 0 && !m.Drained
	}
	held := map[string]int{}
	moves := 0
	for _, p := range parts {
		if o, ok := prev[p]; ok && active[o] {
			held[o]++
		} else {
			moves++ // new, or its holder departed or was drained
		}
	}
	shares, err := rebalance.Shares(members, len(parts), held)
	if err != nil {
		return 0, nil, err
	}
	for name, h := range held {
		moves += max(h-shares[name], 0)
	}
	return moves, shares, nil
}

// moved counts the partitions of next whose owner is not the one prev
// gives them (or that prev does not have).
func moved(prev, next map[zkalloc.Partition]string) int {
	n := 0
	for p, o := range next {
		if prev[p] != o {
			n++
		}
	}
	return n
}

// withinShare returns what is wrong, if anything, with counts against
// shares of n partitions by weight: each member's count must be within one
// of n × w / W (strictly: |count − n w / W| < 1), and a drained member's 0.
func withinShare(counts map[string]int, members []rebalance.Member, n int) string {
	total := 0
	for _, m := range members {
		if !m.Drained {
			total += m.Weight
		}
	}
	var bad []string
	for _, m := range members {
		c := counts[m.Name]
		if m.Drained {
			if c != 0 {
				bad = append(bad, fmt.Sprintf("%s (drained) owns %d", m.Name, c))
			}
			continue
		}
		// |c - n w / W| < 1  <=>  |c W - n w| < W
		if d := c*total - n*m.Weight; d >= total || -d >= total {
			bad = append(bad, fmt.Sprintf("%s owns %d, share %d×%d/%d = %.2f", m.Name, c, n, m.Weight, total, float64(n*m.Weight)/float64(total)))
		}
	}
	return strings.Join(bad, "; ")
}

// TestStickySequenceMovesTheMinimum runs the default configuration (no
// Strategy, so the sticky one; Settle 0; no DepartureDelay) through joins,
// a leave, a crash (its session expires), a partition add and a remove, a
// member of weight 2, a drain and an undrain, and a last join. After each
// it waits for the group to converge and checks that the partitions that
// changed owner are exactly the minimum, computed here from the shares
// (rebalance.Shares), and that every member is within one partition of
// n × w / W. It logs, per event, moved against the minimum and the time
// the group took to converge.
func TestStickySequenceMovesTheMinimum(t *testing.T) {
	srv := server(t)
	const group = "sticky-sequence"
	paths := zkpath.Group{Root: zkalloc.DefaultRoot, Group: group}
	wake := make(chan struct{}, 1) // one slot: some consumer received an Update
	cfg := func(name string, seed map[string][]int32) zkalloc.Config {
		return zkalloc.Config{Servers: []string{srv.Addr()}, Group: group, Member: name, Partitions: seed, Logger: testLogger()}
	}
	conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	parts := map[zkalloc.Partition]bool{} // the group's set
	for _, topic := range []string{"x", "y"} {
		for id := range int32(12) {
			parts[zkalloc.Partition{Topic: topic, ID: id}] = true
		}
	}
	var live []*stickyMember
	drained := map[string]bool{}
	prev := map[zkalloc.Partition]string{}
	type row struct {
		event          string
		moved, minimum int
		took           time.Duration
	}
	var rows []row

	// step waits for the group to converge after event, begun at began,
	// then checks the moves against the minimum and the shares.
	step := func(event string, began time.Time, extra func(snapshot) string) {
		t.Helper()
		want := slices.SortedFunc(maps.Keys(parts), rebalance.Compare)
		names := make([]string, len(live))
		members := make([]rebalance.Member, len(live))
		for i, m := range live {
			names[i] = m.name
			members[i] = rebalance.Member{Name: m.name, Weight: m.weight, Drained: drained[m.name]}
		}
		slices.Sort(names)
		s := awaitSticky(t, wake, live, names, want, extra)
		minimum, shares, err := minimumMoves(prev, members, want)
		if err != nil {
			t.Fatalf("%s: the shares: %v", event, err)
		}
		got := moved(prev, s.owner)
		took := s.last.Sub(began)
		rows = append(rows, row{event, got, minimum, took})
		if got != minimum {
			t.Errorf("%s: %d partitions changed owner, want the minimum %d (shares %v, owned before %v, now %v)",
				event, got, minimum, shares, snapshot{owner: prev}.count(), s.count())
		}
		if problem := withinShare(s.count(), members, len(want)); problem != "" {
			t.Errorf("%s: not within one of the shares: %s", event, problem)
		}
		prev = s.owner
	}
	without := func(name string) {
		live = slices.DeleteFunc(live, func(m *stickyMember) bool { return m.name == name })
	}
	join := func(c zkalloc.Config) *stickyMember {
		m, began := startSticky(t, c, wake)
		live = append(live, m)
		step(fmt.Sprintf("join %s (weight %d)", c.Member, m.weight), began, nil)
		return m
	}

	seed := map[string][]int32{"x": ids(12), "y": ids(12)}
	a := join(cfg("a", seed))
	join(cfg("b", nil))
	// c reaches the server through a proxy of its own, so that it can
	// crash: its connection goes dark and its session expires.
	proxy := zktest.StartProxy(t, srv.Addr())
	cc := cfg("c", nil)
	cc.Servers, cc.SessionTimeout = proxy.Addrs(), crashTimeout
	c := join(cc)
	d := join(cfg("d", nil))

	began := time.Now()
	d.close()
	without("d")
	step("leave d (Close)", began, nil)

	began = time.Now()
	proxy.Blackhole(true)
	without("c")
	step(fmt.Sprintf("crash c (session timeout %v)", crashTimeout), began, nil)
	c.close() // it has revoked everything by itself meanwhile

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	began = time.Now()
	if err := a.alloc.AddPartitions(ctx, map[string][]int32{"x": {12, 13, 14}, "y": {12}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []zkalloc.Partition{{Topic: "x", ID: 12}, {Topic: "x", ID: 13}, {Topic: "x", ID: 14}, {Topic: "y", ID: 12}} {
		parts[p] = true
	}
	step("add 4 partitions", began, nil)

	began = time.Now()
	if err := a.alloc.RemovePartitions(ctx, map[string][]int32{"x": {0, 5}, "y": {1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []zkalloc.Partition{{Topic: "x", ID: 0}, {Topic: "x", ID: 5}, {Topic: "y", ID: 1}, {Topic: "y", ID: 2}, {Topic: "y", ID: 3}} {
		delete(parts, p)
	}
	step("remove 5 partitions", began, nil)

	ce := cfg("e", nil)
	ce.Weight = 2
	join(ce)

	// The drain mark, as `zkalloc drain a` writes it.
	beforeDrain := prev
	began = time.Now()
	if _, err := conn.Create(paths.Drained(), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := conn.Create(paths.DrainedMember("a"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	drained["a"] = true
	step("drain a", began, func(s snapshot) string {
		if n := s.count()["a"]; n > 0 {
			return fmt.Sprintf("a drained and still owns %d", n)
		}
		return ""
	})

	began = time.Now()
	if err := conn.Delete(paths.DrainedMember("a"), -1); err != nil {
		t.Fatal(err)
	}
	delete(drained, "a")
	step("undrain a", began, func(s snapshot) string {
		if s.count()["a"] == 0 {
			return "a undrained and still owns nothing"
		}
		return ""
	})

	// Undrained, a is the only member below its share: it takes back
	// its own partitions (issue 27: returning members get their own
	// back), none of anyone else's.
	for p, o := range prev {
		if o == "a" && beforeDrain[p] != "a" {
			t.Errorf("undrained, a took %s, which was %s's before the drain, not its own", p, beforeDrain[p])
		}
	}

	join(cfg("f", nil))

	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %6s %8s %10s\n", "event", "moved", "minimum", "converged")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-34s %6d %8d %10v\n", r.event, r.moved, r.minimum, r.took.Round(time.Millisecond))
	}
	t.Logf("per event:\n%s", b.String())
}
