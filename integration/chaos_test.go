package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
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
	"github.com/zkalloc/zkalloc/integration/history"
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
// Issue 24 added: claims deleted from outside during hand-offs and outside
// them (chaos_claims_test.go), racing writers that empty and refill a
// topic of the partition set (chaos_setwriters_test.go), a leader cut off
// with members that reach only it, on an ensemble of its own
// (chaos_leader_test.go), and member processes stopped past their lease
// or their session and resumed (chaos_procs_test.go).
// Every consumer records what it receives and, once it has stopped what an
// Update revokes, its Ack (some stop slowly); a graceful close is Close
// called from the test while the consumer goes on taking Updates, and the
// member holds its partitions until its consumer acks the final one. The
// history checker then requires that no partition was ever held by two
// members at once (but for the inherent overlap with a member process
// stopped past its session, which the fencing token covers), that every
// partition was owned again in time after the faults, that the group
// converged, that no write of the partition set was lost, and that a
// member resumed past its lease revoked everything at once. The last line
// of the log sums it up: faults by kind, double ownerships, lost set
// writes, and the least margin from Lost to the session's end for the
// members cut off with a deposed leader.
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
	strategies := []rebalance.Strategy{rebalance.RoundRobin, rebalance.Balanced, rebalance.Range, rebalance.StickyStrategy}
	strategy := strategies[seed%uint64(len(strategies))]
	if s := os.Getenv("ZKALLOC_CHAOS_STRATEGY"); s != "" {
		i := slices.IndexFunc(strategies, func(st rebalance.Strategy) bool { return st.Name() == s })
		if i < 0 {
			t.Fatalf("ZKALLOC_CHAOS_STRATEGY %q: not one of round-robin, balanced, range, sticky", s)
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
	for i := range chaosProcs {
		c.procs = append(c.procs, &chaosProc{idx: i, name: fmt.Sprintf("p%d", i), proxy: zktest.StartProxy(t, ens.Addrs()...)})
	}
	c.leader = newLeaderGroup(c)
	defer func() {
		for _, m := range c.members {
			m.strategy.end() // no strategy goroutine outlives the test
			c.stop(m, stopGraceful, false)
		}
		for _, m := range c.procs {
			c.stopProc(m)
		}
		for _, m := range c.leader.members {
			m.strategy.end()
			c.leader.stop(m, stopGraceful, false)
		}
	}()
	for _, m := range c.members {
		c.start(m)
	}
	for _, m := range c.procs {
		c.startProc(m)
	}
	for _, m := range c.leader.members {
		c.leader.start(m)
	}
	c.waitConverged()
	c.leader.waitConverged()
	c.readSet("start")

	began := time.Now()
	for n := 0; n < faults || soak > 0 && time.Since(began) < soak; n++ {
		c.inject(n)
		c.pause(100*time.Millisecond, 800*time.Millisecond)
	}
	c.heal()
	c.leader.heal()
	faultsEnd := time.Now()
	c.waitConverged()
	c.leader.waitConverged()
	c.readSet("end")
	stalled := 0
	for _, m := range c.members {
		_, n := m.strategy.end()
		stalled += n
	}
	t.Logf("%d faults in %v; %d closes drained partitions, %d strategy runs stalled",
		len(c.rec.History().Faults), faultsEnd.Sub(began).Round(time.Millisecond), c.drained.Load(), stalled)

	names := slices.Concat(c.names(), c.procNames())
	h := c.rec.History()
	report := history.Check(h, history.Options{
		Expected:    c.expected(),
		FaultsEnd:   faultsEnd,
		Deadline:    chaosTimeout + chaosSettle + chaosMargin,
		Live:        names,
		ResumeBound: chaosResumeBound,
	})
	t.Logf("chaos report:\n%s", report.Markdown())
	lh := c.leader.rec.History()
	leaderReport := history.Check(lh, history.Options{
		Expected:  c.leader.expected(),
		FaultsEnd: faultsEnd,
		Deadline:  chaosTimeout + chaosSettle + chaosMargin,
		Live:      c.leader.names(),
	})
	t.Logf("leader group report:\n%s", leaderReport.Markdown())
	c.checkCuts(h)
	revokeMax := c.checkClaims()
	margin, isolated := c.leader.checkLeaderCuts(lh)
	for _, o := range report.Excused {
		t.Logf("excused: %s", o)
	}
	stale := c.staleWrites.Load()
	if stale > 0 {
		t.Errorf("seed %d: %d compare-and-sets of the partition set applied to a topic node deleted and created again since it was read: each overwrote another writer's acknowledged write", seed, stale)
	}
	for _, g := range []struct {
		name string
		r    history.Report
		h    history.History
	}{{"", report, h}, {"leader group: ", leaderReport, lh}} {
		name, r, hist := g.name, g.r, g.h
		if err := r.Err(); err != nil {
			for _, o := range r.DoubleOwnerships {
				t.Logf("around %s:\n%s", o, around(hist, o.Partition, o.From, r.Start))
			}
			for _, res := range lateResumes(r) {
				t.Logf("%s stopped from +%v to +%v:\n%s", res.Member, res.From.Sub(r.Start), res.To.Sub(r.Start), memberAround(hist, res.Member, res.From, res.To.Add(chaosResumeBound+5*time.Second), r.Start))
			}
			t.Errorf("seed %d: %s%v", seed, name, err)
		}
	}
	// The summary comes last.
	t.Logf("chaos summary (seed %d): faults %s; double ownerships %d (leader group %d); lost set writes %d (%d reads against %d writes; stale compare-and-sets %d); "+
		"members cut off with a deposed leader %d, least margin from Lost to the session's end or a take-over %v; "+
		"deleted steady claims %d, revoked after %v at most; members resumed past their lease %d, late %d, overlaps excused %d",
		seed, faultCounts(report.FaultsByKind), len(report.DoubleOwnerships), len(leaderReport.DoubleOwnerships),
		len(report.LostWrites), report.SetReads, report.SetWrites, stale, isolated, margin.Round(time.Millisecond),
		len(c.claimChecks), revokeMax.Round(time.Millisecond), len(report.Resumes), len(lateResumes(report)), len(report.Excused))
}

// names returns the names of c's in-process members.
func (c *chaos) names() []string {
	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.name
	}
	return names
}

// faultCounts renders faults by kind, sorted: "kill-leader ×2, reset ×4".
func faultCounts(by map[string]int) string {
	var parts []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, by[k]))
		total += by[k]
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func lateResumes(r history.Report) []history.Resume {
	var out []history.Resume
	for _, res := range r.Resumes {
		if res.Late {
			out = append(out, res)
		}
	}
	return out
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

// memberAround lists member's events from from to to, for a failure
// message.
func memberAround(h history.History, member string, from, to, start time.Time) string {
	var b strings.Builder
	for _, e := range h.Events {
		if e.Member == member && !e.Time.Before(from.Add(-time.Second)) && !e.Time.After(to) {
			fmt.Fprintf(&b, "  +%v %s seq %d gen %d assigned %v revoked %v\n", e.Time.Sub(start), e.Kind, e.Seq, e.Generation, e.Assigned, e.Revoked)
		}
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

	procs       []*chaosProc // members in processes of their own
	leader      *chaos       // the leader group, for isolate-leader; nil in the leader group itself
	leaderCuts  []leaderCut  // members cut off with their deposed leader (in the leader group)
	claimChecks []claimCheck // by delete-claim-steady
	setWrites   atomic.Int64 // writes by set-writers
	staleWrites atomic.Int64 // their compare-and-sets applied to a node deleted and created again since read
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
	grace    time.Duration // its Config.DisconnectGrace
	// slowAck, if not zero, is how long its consumer takes to stop what
	// an Update revokes (delete-claim-handoff sets it for a while).
	slowAck atomic.Int64

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
		Servers:         m.proxy.Addrs(),
		Group:           c.group,
		Member:          m.name,
		Partitions:      seed,
		SessionTimeout:  chaosTimeout,
		Settle:          chaosSettle,
		ReleaseTimeout:  chaosRelease,
		DisconnectGrace: m.grace,
		Strategy:        m.configStrategy(),
		Logger:          testLogger(),
	}
}

// configStrategy is the Strategy m's Config gets: its stalling wrapper,
// or the sticky strategy itself, which the Allocator recognizes only
// unwrapped (it runs over the record, and its stall faults are replaced).
func (m *chaosMember) configStrategy() rebalance.Strategy {
	if m.strategy.Strategy == rebalance.StickyStrategy {
		return rebalance.StickyStrategy
	}
	return m.strategy
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
		tokens := make([]int64, len(u.Assigned))
		for i, p := range u.Assigned {
			tokens[i], _ = u.Token(p)
		}
		seq := c.rec.Record(history.Event{Kind: history.KindReceived, Member: name, Generation: u.Generation,
			Members: u.Members, Assigned: u.Assigned, Revoked: u.Revoked, Tokens: tokens})
		m.last = u
		final := m.closing && len(u.Assigned) == 0 && len(u.Revoked) > 0
		slow := final && m.slowClose
		m.mu.Unlock()
		switch slowAck := time.Duration(m.slowAck.Load()); {
		case slowAck > 0 && len(u.Revoked) > 0:
			time.Sleep(slowAck) // this fault's consumer is slow to stop what a hand-off revokes
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
	// A crashed member's Close runs in the dark: its session may live on
	// at the server for all it knows (its lease ran out, but nothing says
	// the session ended), so it keeps its claims until the drain's bound,
	// ReleaseTimeout after its consumer received the final Update, which
	// a dead consumer never acks (issue 24: only an ended session counts
	// as claims gone).
	bound := 5 * time.Second
	if mode == stopCrash {
		bound += chaosRelease
	}
	if took := time.Since(start); took > bound {
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
	{"delete-claim-handoff", 1},
	{"delete-claim-steady", 1},
	{"set-writers", 1},
	{"isolate-leader", 1},
	{"pause-lease", 1},
	{"pause-expire", 1},
}

// chaosForced are the faults injected at fixed places in the schedule
// (counted from 0), so that every run of 22 faults or more has each kind
// of issue 24 at least once, and restarts the whole ensemble once.
var chaosForced = map[int]string{
	3:  "isolate-leader",
	6:  "pause-expire",
	9:  "restart-ensemble",
	12: "set-writers",
	15: "delete-claim-handoff",
	18: "pause-lease",
	21: "delete-claim-steady",
}

// inject runs the nth fault (from 0): the forced one if there is one,
// else one chosen by weight.
func (c *chaos) inject(n int) {
	kind, forced := chaosForced[n]
	if !forced {
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
	if kind == "stall-strategy" && c.strategy == rebalance.StickyStrategy {
		// The sticky strategy runs over the record, not through a
		// Strategy that can be made to stall: restart a member instead.
		kind = "restart-member"
	}
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
	end := time.Now()
	c.rec.Fault(kind, start, end)
	if kind == "isolate-leader" {
		c.leader.rec.Fault(kind, start, end)
	}
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
		remove := c.set[p]
		invoked := time.Now()
		if remove {
			err = alloc.RemovePartitions(ctx, change)
			delete(c.set, p)
		} else {
			err = alloc.AddPartitions(ctx, change)
			c.set[p] = true
		}
		if err != nil {
			c.t.Fatalf("change %v: %v", change, err)
		}
		c.rec.SetWrite(history.SetWrite{Writer: "change-" + m.name, Remove: remove, Partitions: []zkalloc.Partition{p}, Invoked: invoked, Returned: time.Now()})
		c.rec.Expect(c.expected()) // the checker judges each instant against the set in force
	case "delete-claim-handoff":
		c.deleteClaimHandoff()
	case "delete-claim-steady":
		c.deleteClaimSteady()
	case "set-writers":
		c.setWriters()
	case "isolate-leader":
		c.isolateLeader(c.leader)
	case "pause-lease", "pause-expire":
		c.pauseMember(kind)
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
	for _, m := range c.procs {
		m.mu.Lock()
		down := m.cmd == nil
		m.mu.Unlock()
		if down {
			c.startProc(m)
		}
	}
}

func (c *chaos) expected() []zkalloc.Partition {
	var out []zkalloc.Partition
	for p := range c.set {
		out = append(out, p)
	}
	slices.SortFunc(out, rebalance.Compare)
	return out
}

// waitConverged waits until the last updates every member's consumer
// received (in-process members and member processes) agree on one
// generation and split the expected set exactly, with nothing pending.
func (c *chaos) waitConverged() {
	c.t.Helper()
	// What the consumers received and the history recorded, not Current:
	// the check that follows reads the history.
	waitFor(c.t, 60*time.Second, c.converged)
}
