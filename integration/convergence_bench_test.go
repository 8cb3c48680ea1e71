package integration_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// BenchmarkConvergence measures, against a real ZooKeeper on loopback, how
// long a group takes to converge after a member joins and after one leaves
// gracefully: from the call (Start of the newcomer, Close of the leaver) to
// the moment the last member received the Update of the new view with the
// hand-off complete (every partition assigned exactly once). Each
// iteration is one join and one leave. It reports the 50th and 99th
// percentiles over the iterations. The members talk to the server
// directly; BenchmarkConvergenceRequests counts their requests. Run it,
// in integration/, with a fixed count for stable percentiles:
//
//	go test -run XXX -bench 'Convergence$' -benchtime 20x -timeout 60m .
func BenchmarkConvergence(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{})
	for _, s := range []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced, rebalance.RoundRobin} {
		for _, members := range []int{10, 50, 100} {
			for _, settle := range []time.Duration{0, 100 * time.Millisecond} {
				b.Run(fmt.Sprintf("%s/members=%d/settle=%v", s.Name(), members, settle), func(b *testing.B) {
					benchConvergence(b, srv.Addr(), s, members, settle, false)
				})
			}
		}
	}
}

// BenchmarkConvergenceRequests is BenchmarkConvergence at 50 members with
// the members' requests counted by a tapped proxy between them and the
// server: it reports the ZooKeeper requests per member per change, with
// and without the claims of the partitions that moved. The proxy adds a
// loopback hop to every request, and its copying takes CPU from the
// members and the server: its percentiles are about 10 ms above
// BenchmarkConvergence's here.
//
//	go test -run XXX -bench ConvergenceRequests -benchtime 20x .
func BenchmarkConvergenceRequests(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{})
	for _, s := range []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced} {
		b.Run(s.Name()+"/members=50", func(b *testing.B) {
			benchConvergence(b, srv.Addr(), s, 50, 0, true)
		})
	}
}

// BenchmarkConvergenceDefaultJVM is BenchmarkConvergence at 50 members
// against a server on the JVM's own defaults (its optimizing compiler),
// as production runs ZooKeeper, instead of the tests' small JVM, which
// takes 1 to 3 ms a request here (in integration/):
//
//	go test -run XXX -bench ConvergenceDefaultJVM -benchtime 20x .
func BenchmarkConvergenceDefaultJVM(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{DefaultJVM: true})
	for _, s := range []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced} {
		b.Run(s.Name()+"/members=50", func(b *testing.B) {
			benchConvergence(b, srv.Addr(), s, 50, 0, false)
		})
	}
}

// benchMember is one allocator whose consumer notes every update.
type benchMember struct {
	name  string
	alloc *zkalloc.Allocator
	mu    sync.Mutex
	last  zkalloc.Update
	at    time.Time
	done  chan struct{}
}

type benchGroup struct {
	b        testing.TB
	servers  []string
	counted  []string // the members' servers: servers, or a tapped proxy to them that counts their requests (see count)
	group    string
	parts    map[string][]int32
	want     int
	settle   time.Duration
	strategy rebalance.Strategy
	members  []*benchMember
	wake     chan struct{} // one slot: some consumer received an update
	// startTimeout bounds each Start; default a minute.
	startTimeout time.Duration
	all          atomic.Int64 // requests of every member
	claims       atomic.Int64 // requests on claims
	record       atomic.Int64 // requests on the sticky strategy's record (the head and its shares)
}

// crashTimeout is the session timeout of the members that crash in
// BenchmarkConvergenceCrash: the server notices a crash only when it
// expires the session.
const crashTimeout = 2 * time.Second

// BenchmarkConvergenceCrash measures how long a group of M members takes
// to converge after one more member crashes: its connection goes dark, as
// when its machine dies, and the server expires its session crashTimeout
// (2 s) after its last contact. Timed from the moment the connection goes
// dark to the moment the last remaining member received the Update of the
// new view with the hand-off complete; the session timeout is in the
// figure, whatever is above it is zkalloc's and ZooKeeper's reaction.
// Each iteration is one crash:
//
//	go test -run XXX -bench ConvergenceCrash -benchtime 20x -timeout 60m .
func BenchmarkConvergenceCrash(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{})
	for _, s := range []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced} {
		for _, members := range []int{10, 50, 100} {
			b.Run(fmt.Sprintf("%s/members=%d/settle=0s", s.Name(), members), func(b *testing.B) {
				benchConvergenceCrash(b, srv.Addr(), s, members)
			})
		}
	}
}

func benchConvergenceCrash(b *testing.B, server string, s rebalance.Strategy, members int) {
	g := newBenchGroup(b, server, s, members, 0, false)
	defer g.closeAll()
	// An observer learns when the server expires the session: the
	// victim's member node goes then.
	obs, _, err := zk.Connect([]string{server}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer obs.Close()
	paths := zkpath.Group{Root: "/zkalloc", Group: g.group}
	var crashes, reactions []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		proxy := zktest.StartProxy(b, server)
		victim, err := g.startWith(fmt.Sprintf("crash%03d", i), proxy.Addrs(), crashTimeout)
		if err != nil {
			b.Fatal(err)
		}
		g.members = append(g.members, victim)
		g.waitConverged(time.Now())
		g.members = g.members[:len(g.members)-1]
		exists, _, gone, err := obs.ExistsW(paths.Member(victim.name))
		if err != nil || !exists {
			b.Fatalf("member node of %s: exists %v, %v", victim.name, exists, err)
		}
		expired := make(chan time.Time, 1)
		go func() {
			<-gone
			expired <- time.Now()
		}()
		b.StartTimer()
		start := time.Now()
		proxy.Blackhole(true)
		took := g.waitConverged(start)
		crashes = append(crashes, took)
		select {
		case at := <-expired:
			reactions = append(reactions, start.Add(took).Sub(at))
		case <-time.After(time.Minute):
			b.Fatal("the crashed member's node is still there")
		}
		b.StopTimer()
		victim.close() // it has revoked everything by itself meanwhile
		if err := proxy.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	report(b, "crash", crashes)
	report(b, "after-expiry", reactions)
}

// newBenchGroup starts n members sharing 1,000 partitions (10 topics of
// 100) and waits for them to converge. With tapped, the members talk to
// the server through a tapped proxy that counts their requests.
func newBenchGroup(b *testing.B, server string, s rebalance.Strategy, n int, settle time.Duration, tapped bool) *benchGroup {
	g := &benchGroup{
		b:        b,
		strategy: s,
		servers:  []string{server},
		group:    fmt.Sprintf("bench-%d-%d", n, time.Now().UnixNano()),
		parts:    map[string][]int32{},
		settle:   settle,
		wake:     make(chan struct{}, 1),
	}
	g.counted = []string{server}
	if tapped {
		g.counted = zktest.StartTappedProxy(b, g.count, server).Addrs()
	}
	for t := range 10 {
		g.parts[fmt.Sprintf("t%d", t)] = ids(100)
	}
	g.want = 1000
	for range n {
		g.join()
	}
	g.waitConverged(time.Now())
	return g
}

func benchConvergence(b *testing.B, server string, s rebalance.Strategy, n int, settle time.Duration, tapped bool) {
	g := newBenchGroup(b, server, s, n, settle, tapped)
	defer g.closeAll()

	var joins, leaves []time.Duration
	var requests, claimRequests, recordRequests int64
	b.ResetTimer()
	for range b.N {
		all, claims, record := g.all.Load(), g.claims.Load(), g.record.Load()
		start := time.Now()
		g.join()
		joins = append(joins, g.waitConverged(start))

		leaver := g.members[len(g.members)-1]
		g.members = g.members[:len(g.members)-1]
		start = time.Now()
		leaver.close()
		leaves = append(leaves, g.waitConverged(start))
		requests += g.all.Load() - all
		claimRequests += g.claims.Load() - claims
		recordRequests += g.record.Load() - record
	}
	b.StopTimer()
	changes := float64(2 * b.N)
	report(b, "join", joins)
	report(b, "leave", leaves)
	if !tapped {
		return
	}
	b.ReportMetric(float64(requests)/changes/float64(n), "req/member/change")
	b.ReportMetric(float64(requests-claimRequests)/changes/float64(n), "req-w/o-claims/member/change")
	if s == rebalance.StickyStrategy {
		b.ReportMetric(float64(recordRequests)/changes/float64(n), "req-record/member/change")
	}
}

// report reports the 50th and 99th percentiles of ds in milliseconds.
func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(percentile(ds, 50).Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(percentile(ds, 99).Microseconds())/1000, name+"-p99-ms")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func (g *benchGroup) join() {
	m, err := g.start(fmt.Sprintf("m%03d", len(g.members)))
	if err != nil {
		g.b.Fatal(err)
	}
	g.members = append(g.members, m)
}

// start starts a member named name and its consumer; it does not add it
// to g.members. It is safe for concurrent use.
func (g *benchGroup) start(name string) (*benchMember, error) {
	return g.startWith(name, g.counted, 10*time.Second)
}

// startWith is start with the member's own servers and session timeout.
func (g *benchGroup) startWith(name string, servers []string, timeout time.Duration) (*benchMember, error) {
	cfg := zkalloc.Config{
		Servers:        servers,
		Group:          g.group,
		Member:         name,
		Partitions:     g.parts,
		SessionTimeout: timeout,
		Settle:         g.settle,
		Strategy:       g.strategy,
		Logger:         testLogger(),
	}
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		return nil, err
	}
	m := &benchMember{name: name, alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			u.Ack()
			m.mu.Lock()
			m.last, m.at = u, time.Now()
			m.mu.Unlock()
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(g.startTimeout, time.Minute))
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		alloc.Close()
		<-m.done
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return m, nil
}

func (m *benchMember) close() {
	m.alloc.Close()
	<-m.done
}

func (g *benchGroup) closeAll() {
	for _, m := range g.members {
		m.close()
	}
}

// waitConverged waits until every member's last update shows the current
// members and the partitions split exactly, and returns how long after
// start the last of those updates arrived.
func (g *benchGroup) waitConverged(start time.Time) time.Duration {
	deadline := time.After(time.Minute)
	for {
		if last, ok := g.converged(); ok {
			return last.Sub(start)
		}
		select {
		case <-g.wake:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			g.b.Fatalf("no convergence within a minute")
		}
	}
}

func (g *benchGroup) converged() (time.Time, bool) {
	var gen int64
	var last time.Time
	assigned := 0
	for i, m := range g.members {
		m.mu.Lock()
		u, at := m.last, m.at
		m.mu.Unlock()
		if i == 0 {
			gen = u.Generation
		}
		if u.Generation != gen || len(u.Members) != len(g.members) {
			return time.Time{}, false
		}
		assigned += len(u.Assigned)
		if at.After(last) {
			last = at
		}
	}
	return last, assigned == g.want
}

// count counts a request that a member sent, as a tapped proxy sees it:
// the requests of the client's API (reads, writes, multis), apart from
// syncs; not the client's pings, nor the watches it sets again on a new
// connection. A request on a claim is counted in claims too, and one on
// the sticky strategy's record (its head or a share node) in record; a
// multi is one on claims, or on the record, if its first operation is:
// the claims actor's batches are all claims, the record's writes all
// record nodes, the set's writes neither.
func (g *benchGroup) count(r zktest.Request) {
	if r.Path == "" || r.Op == "sync" {
		return
	}
	g.all.Add(1)
	switch {
	case strings.Contains(r.Path, "/owners/"):
		g.claims.Add(1)
	case strings.HasSuffix(r.Path, "/assignment") || strings.Contains(r.Path, "/assignment/"):
		g.record.Add(1)
	}
}
