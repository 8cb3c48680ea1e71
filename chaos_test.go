package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/history"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The chaos test runs members against a 3-node ensemble, each behind its
// own fault-injecting proxy, and injects a seeded random schedule of
// faults: connection resets, short black holes, black holes long enough to
// expire the session, killed followers and leaders, a follower cut off
// from its leader while its clients still reach it (the ensemble's quorum
// links pass through proxies of their own), alone or partitioned with the
// members connected to it, a restart of the whole
// ensemble, graceful member restarts (some with a consumer slow to stop,
// some coming back under a new name), member crashes, partition set
// changes, and strategies that stall for seconds while other faults go on.
// Every consumer records what it receives and, once it has stopped what an
// Update revokes, its Ack (some stop slowly); a graceful close is Close
// called from the test while the consumer goes on taking Updates, and the
// member holds its partitions until its consumer acks the final one. The
// history checker then requires that no partition was ever held by two
// members at once, that every partition was owned again in time after the
// faults, and that the group converged.
//
// ZKALLOC_CHAOS_SEED replays a schedule; ZKALLOC_CHAOS_FAULTS sets how many
// faults (default 50); ZKALLOC_CHAOS_DURATION (e.g. 10m) keeps injecting
// until that much time has passed, for a soak.

const (
	chaosMembers   = 5
	chaosTimeout   = 2 * time.Second // session timeout
	chaosSettle    = 50 * time.Millisecond
	chaosRelease   = 10 * time.Second
	chaosMaxAck    = 400 * time.Millisecond // the slowest a consumer takes to stop revoked partitions
	chaosMinClose  = 50 * time.Millisecond  // a slow consumer's time to stop everything on Close,
	chaosMaxClose  = 500 * time.Millisecond // ... from min to max
	chaosMinStall  = time.Second            // a stalled strategy's delay, from min
	chaosMaxStall  = 8 * time.Second        // ... to max
	chaosMargin    = 5 * time.Second        // stated margin for a takeover after faults end
	chaosStartMax  = 20 * time.Second
	chaosCloseHung = time.Minute // Close has hung: the test fails
)

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test skipped in -short mode")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ZKALLOC_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ZKALLOC_CHAOS_SEED: %v", err)
		}
	}
	faults := envInt(t, "ZKALLOC_CHAOS_FAULTS", 50)
	var soak time.Duration
	if s := os.Getenv("ZKALLOC_CHAOS_DURATION"); s != "" {
		var err error
		if soak, err = time.ParseDuration(s); err != nil {
			t.Fatalf("ZKALLOC_CHAOS_DURATION: %v", err)
		}
	}
	// The seed picks the strategy too, so that runs cover them all and a
	// replay runs the same one; ZKALLOC_CHAOS_STRATEGY overrides it.
	strategies := []rebalance.Strategy{rebalance.RoundRobin, rebalance.Balanced, rebalance.Range}
	strategy := strategies[seed%uint64(len(strategies))]
	if s := os.Getenv("ZKALLOC_CHAOS_STRATEGY"); s != "" {
		i := slices.IndexFunc(strategies, func(st rebalance.Strategy) bool { return st.Name() == s })
		if i < 0 {
			t.Fatalf("ZKALLOC_CHAOS_STRATEGY %q: not one of round-robin, balanced, range", s)
		}
		strategy = strategies[i]
	}
	t.Logf("chaos seed %d, strategy %s (replay with ZKALLOC_CHAOS_SEED=%d)", seed, strategy.Name(), seed)

	ens := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: chaosTick, SyncLimit: chaosSyncLimit, QuorumProxies: true})
	obs, _, err := zk.Connect(ens.Addrs(), chaosTimeout, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	c := &chaos{
		t:        t,
		ens:      ens,
		obs:      obs,
		rng:      rand.New(rand.NewPCG(seed, 0x5eed)),
		seed:     seed,
		rec:      history.NewRecorder(nil),
		group:    "chaos",
		strategy: strategy,
		set:      map[zkalloc.Partition]bool{},
	}
	for _, topic := range []string{"a", "b", "c"} {
		for id := range int32(8) {
			c.set[zkalloc.Partition{Topic: topic, ID: id}] = true
		}
	}
	c.rec.Expect(c.expected())
	for i := range chaosMembers {
		m := &chaosMember{
			idx:      i,
			name:     fmt.Sprintf("m%d", i),
			proxy:    zktest.StartProxy(t, ens.Addrs()...),
			strategy: newStallingStrategy(strategy),
		}
		c.members = append(c.members, m)
	}
	defer func() {
		for _, m := range c.members {
			m.strategy.end() // no strategy goroutine outlives the test
			c.stop(m, stopGraceful, false)
		}
	}()
	for _, m := range c.members {
		c.start(m)
	}
	c.waitConverged()

	began := time.Now()
	for n := 0; n < faults || soak > 0 && time.Since(began) < soak; n++ {
		c.inject(n)
		c.pause(100*time.Millisecond, 800*time.Millisecond)
	}
	c.heal()
	faultsEnd := time.Now()
	c.waitConverged()
	stalled := 0
	for _, m := range c.members {
		_, n := m.strategy.end()
		stalled += n
	}
	t.Logf("%d faults in %v; %d closes drained partitions, %d strategy runs stalled",
		len(c.rec.History().Faults), faultsEnd.Sub(began).Round(time.Millisecond), c.drained.Load(), stalled)

	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.name
	}
	report := history.Check(c.rec.History(), history.Options{
		Expected:  c.expected(),
		FaultsEnd: faultsEnd,
		Deadline:  chaosTimeout + chaosSettle + chaosMargin,
		Live:      names,
	})
	t.Logf("chaos report:\n%s", report.Markdown())
	c.checkCuts(c.rec.History())
	if err := report.Err(); err != nil {
		for _, o := range report.DoubleOwnerships {
			t.Logf("around %s:\n%s", o, around(c.rec.History(), o.Partition, o.From, report.Start))
		}
		t.Fatalf("seed %d: %v", seed, err)
	}
}

// around lists the events and faults within a few seconds of at that
// concern p, for a failure message.
func around(h history.History, p zkalloc.Partition, at, start time.Time) string {
	var b strings.Builder
	near := func(t time.Time) bool { return t.After(at.Add(-4*time.Second)) && t.Before(at.Add(time.Second)) }
	for _, f := range h.Faults {
		if near(f.End) || near(f.Start) {
			fmt.Fprintf(&b, "  fault %s from +%v to +%v\n", f.Kind, f.Start.Sub(start), f.End.Sub(start))
		}
	}
	for _, e := range h.Events {
		if !near(e.Time) {
			continue
		}
		if e.Kind == history.KindExpected {
			fmt.Fprintf(&b, "  +%v expected set now %v\n", e.Time.Sub(start), e.Expected)
			continue
		}
		has := slices.Contains(e.Assigned, p) || slices.Contains(e.Revoked, p)
		if e.Kind == history.KindReceived && !has {
			continue
		}
		fmt.Fprintf(&b, "  +%v %s %s seq %d gen %d assigned %v revoked %v\n", e.Time.Sub(start), e.Member, e.Kind, e.Seq, e.Generation, e.Assigned, e.Revoked)
	}
	return b.String()
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

type chaos struct {
	t        *testing.T
	ens      *zktest.Ensemble
	obs      *zk.Conn   // the test's own client, to watch member nodes
	rng      *rand.Rand // the schedule; used only by the test goroutine
	seed     uint64
	rec      *history.Recorder
	group    string
	strategy rebalance.Strategy
	members  []*chaosMember
	set      map[zkalloc.Partition]bool // the partition set as the test changed it
	stalls   []stall                    // strategy stalls not yet recorded as faults
	drained  atomic.Int64               // graceful closes whose final Update revoked something
	cuts     []quorumCut                // members cut off with their follower, by blackhole-quorum
}

// stall is a strategy stall under way: a fault that runs on its own while
// the schedule goes on.
type stall struct {
	m     *chaosMember
	start time.Time
	until time.Time
}

// chaosMember is one member across its incarnations. name, incs and
// renames change only on the test goroutine, between incarnations.
type chaosMember struct {
	idx      int
	name     string // this incarnation's; a restart may take a new one
	proxy    *zktest.Proxy
	strategy *stallingStrategy // shared by its incarnations
	incs     int               // incarnations started
	renames  int

	mu sync.Mutex // serializes the consumer's records with stopping
	// crashed: the harness killed this incarnation; its consumer is
	// dead and records nothing more. closing: the test is closing it
	// gracefully, and slowClose: its consumer takes
	// chaosMinClose..chaosMaxClose to stop what the final Update revokes.
	crashed, closing, slowClose bool
	// ended: this incarnation's consumer has seen Updates close and
	// recorded Closed, as when the allocator stopped by itself (Start
	// failed): a stop then records no Closing, which no Closed would end.
	ended bool
	alloc *zkalloc.Allocator // nil while down
	done  chan struct{}      // closed when the consumer of this incarnation ends
	last  zkalloc.Update     // the last update this incarnation's consumer received
}

func (c *chaos) config(m *chaosMember) zkalloc.Config {
	var seed map[string][]int32
	for p := range c.set {
		if seed == nil {
			seed = map[string][]int32{}
		}
		seed[p.Topic] = append(seed[p.Topic], p.ID)
	}
	return zkalloc.Config{
		Servers:        m.proxy.Addrs(),
		Group:          c.group,
		Member:         m.name,
		Partitions:     seed,
		SessionTimeout: chaosTimeout,
		Settle:         chaosSettle,
		ReleaseTimeout: chaosRelease,
		Strategy:       m.strategy,
		Logger:         testLogger(),
	}
}

// start starts a new incarnation of m, retrying while its name is still
// held by the session of a crashed incarnation.
func (c *chaos) start(m *chaosMember) {
	c.t.Helper()
	m.incs++
	deadline := time.Now().Add(chaosStartMax)
	for {
		alloc, err := zkalloc.New(c.config(m))
		if err != nil {
			c.t.Fatal(err)
		}
		done := make(chan struct{})
		m.mu.Lock()
		m.alloc, m.done, m.last = alloc, done, zkalloc.Update{}
		m.crashed, m.closing, m.slowClose, m.ended = false, false, false, false
		m.mu.Unlock()
		go c.consume(m, m.name, alloc, done, rand.New(rand.NewPCG(c.seed, uint64(m.incs)<<8|uint64(m.idx))))
		ctx, cancel := context.WithTimeout(context.Background(), chaosStartMax)
		err = alloc.Start(ctx)
		cancel()
		if err == nil {
			return
		}
		c.stop(m, stopGraceful, false)
		if !errors.Is(err, zkalloc.ErrDuplicateMember) || time.Now().After(deadline) {
			c.t.Fatalf("start %s: %v", m.name, err)
		}
		c.nameFreed(m.name, deadline)
	}
}

// nameFreed waits until the member node of name is gone, as the expiry of
// a crashed incarnation's session removes it, or until deadline.
func (c *chaos) nameFreed(name string, deadline time.Time) {
	path := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Member(name)
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		exists, _, changed, err := c.obs.ExistsW(path)
		if err == nil && !exists {
			return
		}
		if err != nil {
			return // Start tells again whether the name is free
		}
		select {
		case <-changed:
		case <-timeout.C:
			return
		}
	}
}

// consume is m's consumer under name: it records every update, sometimes
// takes a while to stop revoked partitions, records the ack once it has
// stopped them, and acks. On a graceful close it takes the final Update
// like any other; when Updates is closed, it has stopped everything.
func (c *chaos) consume(m *chaosMember, name string, alloc *zkalloc.Allocator, done chan struct{}, r *rand.Rand) {
	defer close(done)
	for u := range alloc.Updates() {
		m.mu.Lock()
		if m.crashed {
			m.mu.Unlock()
			continue // a dead process neither records nor acks
		}
		seq := c.rec.Received(name, u.Generation, u.Members, u.Assigned, u.Revoked)
		m.last = u
		final := m.closing && len(u.Assigned) == 0 && len(u.Revoked) > 0
		slow := final && m.slowClose
		m.mu.Unlock()
		switch {
		case slow:
			// Stopping everything takes this consumer a while: Close must
			// keep the claims until the Ack below.
			time.Sleep(chaosMinClose + time.Duration(r.Int64N(int64(chaosMaxClose-chaosMinClose))))
		case len(u.Revoked) > 0 && r.IntN(3) == 0:
			time.Sleep(time.Duration(r.Int64N(int64(chaosMaxAck)))) // stopping takes the consumer a while
		}
		m.mu.Lock()
		if !m.crashed {
			c.rec.Acked(name, seq) // it has stopped what u revokes: right before the Ack
			if final {
				c.drained.Add(1)
			}
		}
		m.mu.Unlock()
		u.Ack()
	}
	m.mu.Lock()
	if !m.crashed {
		c.rec.Closed(name) // Updates is closed: the consumer has stopped everything
	}
	m.ended = true
	m.mu.Unlock()
}

// How stop ends an incarnation.
type stopMode int

const (
	// stopGraceful: Close is called while the consumer goes on reading
	// Updates; it stops what the final Update revokes and acks it.
	stopGraceful stopMode = iota
	// stopSlow: the same, with a consumer that takes
	// chaosMinClose..chaosMaxClose to stop everything.
	stopSlow
	// stopCrash: the process dies, its consumer first: it has stopped
	// everything at once and records nothing more.
	stopCrash
)

// stop ends m's incarnation as mode says, calling Close from the test's
// goroutine; with check, Close must not fail. Close must return promptly
// even during a fault.
func (c *chaos) stop(m *chaosMember, mode stopMode, check bool) {
	c.t.Helper()
	m.mu.Lock()
	alloc, done := m.alloc, m.done
	if alloc == nil {
		m.mu.Unlock()
		return
	}
	switch {
	case m.ended:
		// Its consumer has recorded Closed already.
	case mode == stopCrash:
		m.crashed = true
		c.rec.Closed(m.name)
	default:
		m.closing, m.slowClose = true, mode == stopSlow
		c.rec.Closing(m.name)
	}
	m.alloc = nil
	m.mu.Unlock()
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- alloc.Close() }()
	select {
	case err := <-closed:
		if err != nil && check {
			c.t.Errorf("Close %s: %v", m.name, err)
		}
	case <-time.After(chaosCloseHung):
		// Fail now, with what every goroutine waits on, rather than at
		// the test binary's timeout.
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		c.t.Fatalf("seed %d: Close of %s has not returned after %v; goroutines:\n%s", c.seed, m.name, chaosCloseHung, buf)
	}
	<-done
	if took := time.Since(start); took > 5*time.Second {
		c.t.Errorf("Close of %s took %v", m.name, took)
	}
}

func (c *chaos) live() []*chaosMember {
	var out []*chaosMember
	for _, m := range c.members {
		m.mu.Lock()
		if m.alloc != nil {
			out = append(out, m)
		}
		m.mu.Unlock()
	}
	return out
}

func (c *chaos) pick() *chaosMember {
	live := c.live()
	return live[c.rng.IntN(len(live))]
}

func (c *chaos) pause(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(c.rng.Int64N(int64(hi-lo)))) // the schedule's gap, not a wait for a condition
}

// fault kinds with their weights in the schedule.
var chaosKinds = []struct {
	name   string
	weight int
}{
	{"reset", 4},
	{"blackhole-short", 3},
	{"blackhole-expire", 2},
	{"kill-follower", 1},
	{"kill-leader", 1},
	{"blackhole-quorum", 1},
	{"partition-follower", 2},
	{"restart-ensemble", 0}, // injected on its own, see inject
	{"restart-member", 2},
	{"close-slow-consumer", 2},
	{"crash-member", 1},
	{"change-partitions", 1},
	{"stall-strategy", 2},
}

// inject runs the nth fault (from 0), chosen by weight; the whole ensemble
// is restarted once, at the tenth fault.
func (c *chaos) inject(n int) {
	kind := ""
	if n == 9 {
		kind = "restart-ensemble"
	} else {
		total := 0
		for _, k := range chaosKinds {
			total += k.weight
		}
		n := c.rng.IntN(total)
		for _, k := range chaosKinds {
			if n < k.weight {
				kind = k.name
				break
			}
			n -= k.weight
		}
	}
	start := time.Now()
	c.endStalls(start, false)
	if kind == "stall-strategy" {
		// It runs on its own: the schedule goes on, and its end is
		// recorded when it comes (endStalls).
		m := c.pickUnstalled()
		until := start.Add(chaosMinStall + time.Duration(c.rng.Int64N(int64(chaosMaxStall-chaosMinStall))))
		m.strategy.stall(until)
		c.stalls = append(c.stalls, stall{m: m, start: start, until: until})
		return
	}
	c.run(kind)
	c.rec.Fault(kind, start, time.Now())
}

// pickUnstalled picks a live member whose strategy is not stalled, or
// any live member if there is none.
func (c *chaos) pickUnstalled() *chaosMember {
	var free []*chaosMember
	for _, m := range c.live() {
		if !slices.ContainsFunc(c.stalls, func(s stall) bool { return s.m == m }) {
			free = append(free, m)
		}
	}
	if len(free) == 0 {
		return c.pick()
	}
	return free[c.rng.IntN(len(free))]
}

// endStalls records the strategy stalls over by now as faults. With all,
// it first ends those still under way.
func (c *chaos) endStalls(now time.Time, all bool) {
	c.stalls = slices.DeleteFunc(c.stalls, func(s stall) bool {
		if now.Before(s.until) && !all {
			return false
		}
		end := s.until
		if now.Before(end) {
			s.m.strategy.end()
			end = now
		}
		c.rec.Fault("stall-strategy", s.start, end)
		return true
	})
}

func (c *chaos) run(kind string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch kind {
	case "reset":
		c.pick().proxy.Reset()
	case "blackhole-short":
		p := c.pick().proxy
		p.Blackhole(true)
		c.pause(200*time.Millisecond, chaosTimeout/2)
		p.Blackhole(false)
	case "blackhole-expire":
		p := c.pick().proxy
		p.Blackhole(true)
		c.pause(chaosTimeout+500*time.Millisecond, chaosTimeout+1500*time.Millisecond)
		p.Blackhole(false)
	case "kill-follower", "kill-leader":
		leader, err := c.ens.Leader(ctx)
		if err != nil {
			c.t.Fatal(err)
		}
		victim := leader
		if kind == "kill-follower" {
			victim = (leader + 1 + c.rng.IntN(2)) % 3
		}
		if err := c.ens.Kill(victim); err != nil {
			c.t.Fatal(err)
		}
		c.pause(300*time.Millisecond, 2*time.Second)
		if err := c.ens.Start(ctx, victim); err != nil {
			c.t.Fatal(err)
		}
		if err := c.ens.WaitServing(ctx); err != nil {
			c.t.Fatal(err)
		}
	case "blackhole-quorum", "partition-follower":
		c.cutQuorum(ctx, kind == "partition-follower")
	case "restart-ensemble":
		if err := c.ens.StopAll(); err != nil {
			c.t.Fatal(err)
		}
		c.pause(100*time.Millisecond, time.Second)
		if err := c.ens.StartAll(ctx); err != nil {
			c.t.Fatal(err)
		}
	case "restart-member":
		m := c.pick()
		c.stop(m, stopGraceful, true)
		c.pause(0, time.Second)
		c.start(m)
	case "close-slow-consumer":
		// Closed while its consumer is slow to stop; it comes back under
		// the same name or, half the time, under a new one (the old name
		// leaves the group for good).
		m := c.pick()
		c.stop(m, stopSlow, true)
		c.pause(0, time.Second)
		if c.rng.IntN(2) == 0 {
			m.renames++
			m.name = fmt.Sprintf("m%d-%d", m.idx, m.renames)
		}
		c.start(m)
	case "crash-member":
		// The process dies: nothing it sends reaches ZooKeeper any more, so
		// its session lives on until the server expires it.
		m := c.pick()
		m.proxy.Blackhole(true)
		c.stop(m, stopCrash, false)
		m.proxy.Blackhole(false)
		c.pause(0, time.Second)
		c.start(m)
	case "change-partitions":
		m := c.pick()
		m.mu.Lock()
		alloc := m.alloc
		m.mu.Unlock()
		topic := string(rune('a' + c.rng.IntN(4)))
		id := int32(c.rng.IntN(10))
		p := zkalloc.Partition{Topic: topic, ID: id}
		change := map[string][]int32{topic: {id}}
		var err error
		if c.set[p] {
			err = alloc.RemovePartitions(ctx, change)
			delete(c.set, p)
		} else {
			err = alloc.AddPartitions(ctx, change)
			c.set[p] = true
		}
		if err != nil {
			c.t.Fatalf("change %v: %v", change, err)
		}
		c.rec.Expect(c.expected()) // the checker judges each instant against the set in force
	default:
		c.t.Fatalf("unknown fault %q", kind)
	}
}

// heal ends every fault: no black hole, every server and member up.
func (c *chaos) heal() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.endStalls(time.Now(), true)
	for _, m := range c.members {
		m.proxy.Blackhole(false)
		c.isolate([]*chaosMember{m}, -1, false)
	}
	for i := range c.ens.Addrs() {
		if err := c.ens.BlackholeQuorum(i, false); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := c.ens.StartAll(ctx); err != nil {
		c.t.Fatal(err)
	}
	for _, m := range c.members {
		m.mu.Lock()
		down := m.alloc == nil
		m.mu.Unlock()
		if down {
			c.start(m)
		}
	}
}

func (c *chaos) expected() []zkalloc.Partition {
	var out []zkalloc.Partition
	for p := range c.set {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePartitions)
	return out
}

// waitConverged waits until the last updates every member's consumer
// received agree on one generation and split the expected set exactly.
func (c *chaos) waitConverged() {
	c.t.Helper()
	want := c.expected()
	waitFor(c.t, 60*time.Second, func() string {
		var gen int64
		seen := map[zkalloc.Partition]string{}
		for i, m := range c.members {
			// What the consumer received and the history recorded, not
			// Current: the check that follows reads the history.
			m.mu.Lock()
			alloc, u := m.alloc, m.last
			m.mu.Unlock()
			if alloc == nil {
				return m.name + " is down"
			}
			if i == 0 {
				gen = u.Generation
			} else if u.Generation != gen {
				return fmt.Sprintf("%s at generation %d, %s at %d", m.name, u.Generation, c.members[0].name, gen)
			}
			if len(u.Members) != len(c.members) {
				return fmt.Sprintf("%s sees members %v", m.name, u.Members)
			}
			for _, p := range u.Assigned {
				if other, ok := seen[p]; ok {
					return fmt.Sprintf("%s assigned to %s and %s", p, other, m.name)
				}
				seen[p] = m.name
			}
		}
		for _, p := range want {
			if _, ok := seen[p]; !ok {
				return fmt.Sprintf("%s not assigned", p)
			}
		}
		if len(seen) != len(want) {
			return fmt.Sprintf("%d assigned, want %d", len(seen), len(want))
		}
		return ""
	})
}
