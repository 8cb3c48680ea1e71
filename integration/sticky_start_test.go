package integration_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// largeTopics × largePerTopic is the partition set of BenchmarkStartLarge:
// issue 27's 100,000.
const largeTopics, largePerTopic = 100, 1000

// startLargeBound is a sanity bound on one Start in BenchmarkStartLarge,
// far above the 2 s: the figure is what the benchmark reports.
// It is TestFastJoin's bound: on the shared 2-core machine, at load
// averages of 8 to 15, a Start took 10.4 s (12-04).
const startLargeBound = 30 * time.Second

// BenchmarkStartLarge reports how long Start takes into a group of
// 100,000 partitions (100 topics of 1,000), with the default strategy
// (sticky) and with Balanced:
//
//   - first: the first member of a new group, seeded with the 100,000;
//     start-ms is its Start, claimed-ms the time from Start's return
//     until it holds all 100,000 (claims created);
//   - join: one member joining a group of 10 that already holds them;
//     start-ms is its Start, handoff-ms the time from Start's return until
//     the 11 have converged (about 9,091 claims handed over).
//
// Each iteration is a new group (named afresh in every run of the
// function: the testing package runs it with b.N = 1 first) on one
// server with the JVM's own defaults: the tests' small JVM, with 256 MB
// of heap, runs out of it with 100,000 claims and their hold records
// once a few groups have come and gone (an OutOfMemoryError in the join
// that followed four first members). Issue 27's bound is a Start under
// 2 s; the benchmark fails only past startLargeBound. In integration/, without -race for the figures a user
// would see:
//
//	go test -run XXX -bench StartLarge -benchtime 3x -timeout 30m .
func BenchmarkStartLarge(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{DefaultJVM: true})
	seed := make(map[string][]int32, largeTopics)
	for i := range largeTopics {
		seed[fmt.Sprintf("t%03d", i)] = ids(largePerTopic)
	}
	const total = largeTopics * largePerTopic
	for _, s := range []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced} {
		cfg := func(group, name string, seed map[string][]int32) zkalloc.Config {
			return zkalloc.Config{Servers: []string{srv.Addr()}, Group: group, Member: name, Partitions: seed, Strategy: s, Logger: testLogger()}
		}
		b.Run(s.Name()+"/first", func(b *testing.B) {
			var starts, claimed []time.Duration
			for i := range b.N {
				var count benchGroup
				m, start := startJoinMember(b, cfg(fmt.Sprintf("large-first-%s-%d-%d", s.Name(), time.Now().UnixNano(), i), "a", seed), &count)
				returned := time.Now()
				checkStart(b, start)
				done := awaitSplit(b, []*joinMember{m}, total, 2*time.Minute)
				starts, claimed = append(starts, start), append(claimed, max(done.Sub(returned), 0))
				b.Logf("first member: Start %v, all claimed %v later; %d requests",
					start.Round(time.Millisecond), done.Sub(returned).Round(time.Millisecond), count.all.Load())
				m.close()
			}
			report(b, "start", starts)
			report(b, "claimed", claimed)
		})
		b.Run(s.Name()+"/join", func(b *testing.B) {
			var starts, handoffs []time.Duration
			for i := range b.N {
				group := fmt.Sprintf("large-join-%s-%d-%d", s.Name(), time.Now().UnixNano(), i)
				var count benchGroup
				var ms []*joinMember
				// The seed comes with the last of the 10, so that the
				// partitions are claimed once, 10,000 by each, rather
				// than handed on at every join.
				for j := range 10 {
					var sd map[string][]int32
					if j == 9 {
						sd = seed
					}
					m, _ := startJoinMember(b, cfg(group, fmt.Sprintf("m%02d", j), sd), &count)
					ms = append(ms, m)
				}
				awaitSplit(b, ms, total, 2*time.Minute)
				var joiner benchGroup
				m, start := startJoinMember(b, cfg(group, "m10", nil), &joiner)
				returned := time.Now()
				checkStart(b, start)
				ms = append(ms, m)
				done := awaitSplit(b, ms, total, 2*time.Minute)
				starts, handoffs = append(starts, start), append(handoffs, max(done.Sub(returned), 0))
				u := m.alloc.Current()
				b.Logf("11th member: Start %v, converged %v later with %d partitions; the newcomer's requests %d (%d on claims)",
					start.Round(time.Millisecond), done.Sub(returned).Round(time.Millisecond), len(u.Assigned), joiner.all.Load(), joiner.claims.Load())
				for _, m := range ms {
					m.close()
				}
			}
			report(b, "start", starts)
			report(b, "handoff", handoffs)
		})
	}
}

func checkStart(b *testing.B, took time.Duration) {
	b.Helper()
	if took > startLargeBound {
		b.Errorf("Start took %v, more than the sanity bound %v (issue 27's bound: 2 s)", took, startLargeBound)
	}
}
