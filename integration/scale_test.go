package integration_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// The scale runs of issue 4 (a million partitions, memory at 100,000
// partitions, a thousand members). They take minutes, gigabytes and both
// cores, so they run only when asked for (without -race, which would
// measure the race detector), in integration/:
//
//	ZKALLOC_SCALE=1 go test -run Scale -v -timeout 60m .
//
// The members' requests are counted by a tapped proxy between them and
// the server (see benchGroup.count): the CPU time they log includes the
// proxy's.
//
// TestScaleThousandMembers reads ZKALLOC_SCALE_MEMBERS (default 1000),
// ZKALLOC_SCALE_BATCH (members started at once, default all) and
// ZKALLOC_SCALE_SETTLE (Config.Settle, default 0); TestScaleMemory writes
// heap profiles to $ZKALLOC_SCALE_HEAPPROFILE.<members> if it is set.
// They log what they measure and fail only on wrong results (a partition
// lost or assigned twice, a znode over half the limit, no convergence),
// never on a time.

func scaleOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("ZKALLOC_SCALE") != "1" {
		t.Skip("scale run; set ZKALLOC_SCALE=1 to run it")
	}
}

// znodeLimit is ZooKeeper's default jute.maxbuffer, the most data a znode
// (or any one request or reply) may hold.
const znodeLimit = 0xfffff

// setRunner is a session and a partition set actor, without the rest of
// an allocator: a writer of the shared set, or a fresh member's reader.
type setRunner struct {
	set     *partset.Set
	conn    zksession.Conn
	started time.Time // when Run was called
	up      time.Time // when the session came up
	last    partitions.View
	cancel  context.CancelFunc
	done    chan error
}

func runSet(t *testing.T, server string, paths zkpath.Group) *setRunner {
	t.Helper()
	sess := zksession.New(actortest.SessionConfig(zksession.Config{Servers: []string{server}, Timeout: 10 * time.Second}))
	probe := sess.Subscribe()
	set := partset.New(partset.Config{
		Paths:   paths,
		Session: sess.Subscribe(),
		ACL:     zk.WorldACL(zk.PermAll),
		Resync:  5 * time.Minute,
		Logger:  slog.New(slog.DiscardHandler),
		Clock:   actor.RealClock(),
	})
	var g actor.Group
	g.Add("session", sess)
	g.Add("partitions", set)
	ctx, cancel := context.WithCancel(context.Background())
	r := &setRunner{set: set, started: time.Now(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- g.Run(ctx) }()
	t.Cleanup(r.close)
	deadline := time.After(time.Minute)
	for r.conn == nil {
		select {
		case <-probe.Changed():
			if st, ok := probe.Take(); ok && st.Status == session.Up {
				r.conn, r.up = st.Conn, time.Now()
			}
		case <-deadline:
			t.Fatal("no session within a minute")
		}
	}
	return r
}

func (r *setRunner) close() {
	r.cancel()
	<-r.done
	r.done <- nil // a second close returns at once
}

// waitView waits for a view of n partitions and returns when it came.
func (r *setRunner) waitView(t *testing.T, n int) time.Time {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for len(r.last.Partitions) != n {
		select {
		case v := <-r.set.Views():
			r.last = v
		case <-deadline:
			t.Fatalf("no view of %d partitions within 5 minutes; last has %d", n, len(r.last.Partitions))
		}
	}
	return time.Now()
}

// znodeSizes reads every topic node of the group and returns the largest
// one's data size and the size of the topic list (as ZooKeeper sends it:
// each name with a 4-byte length).
func znodeSizes(t *testing.T, conn zksession.Conn, paths zkpath.Group) (largest int, topic string, list int) {
	t.Helper()
	names, _, err := conn.Children(paths.Partitions())
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int, len(names))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 32)
	for i, name := range names {
		list += 4 + len(name)
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			_, stat, err := conn.Get(paths.Topic(name))
			if err != nil {
				t.Error(err)
				return
			}
			sizes[i] = int(stat.DataLength)
		}()
	}
	wg.Wait()
	for i, s := range sizes {
		if s > largest {
			largest, topic = s, names[i]
		}
	}
	return largest, topic, list
}

// denseTopics returns topics t0000.. each with IDs 0..ids-1.
func denseTopics(topics, ids int) map[string][]int32 {
	out := make(map[string][]int32, topics)
	for i := range topics {
		out[fmt.Sprintf("t%04d", i)] = idRange(0, ids, 1)
	}
	return out
}

func idRange(from, to, step int) []int32 {
	out := make([]int32, 0, (to-from+step-1)/step)
	for id := from; id < to; id += step {
		out = append(out, int32(id))
	}
	return out
}

// storeAndLoad writes set into a new group with one partition set actor,
// then starts a fresh one and waits for its first full view. It returns
// that view.
func storeAndLoad(t *testing.T, srv *zklaunch.Server, group string, set map[string][]int32) partitions.View {
	t.Helper()
	n := 0
	for _, ids := range set {
		n += len(ids)
	}
	paths := zkpath.Group{Root: "/zkalloc", Group: group}
	writer := runSet(t, srv.Addr(), paths)
	writer.waitView(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if err := writer.set.Add(ctx, set); err != nil {
		t.Fatalf("store: %v", err)
	}
	stored := time.Since(start)
	seen := writer.waitView(t, n).Sub(start)
	t.Logf("%s: stored %d partitions in %d topics in %v (AddPartitions); the writer's own view followed after %v",
		group, n, len(set), stored.Round(time.Millisecond), seen.Round(time.Millisecond))
	largest, topic, list := znodeSizes(t, writer.conn, paths)
	writer.close()
	t.Logf("%s: largest topic znode %d bytes (%s, %.1f%% of the %d-byte limit); topic list reply %d bytes",
		group, largest, topic, 100*float64(largest)/znodeLimit, znodeLimit, list)
	if largest > znodeLimit/2 || list > znodeLimit/2 {
		t.Errorf("%s: a znode or the topic list is over half of ZooKeeper's limit", group)
	}

	runtime.GC()
	reader := runSet(t, srv.Addr(), paths)
	loaded := reader.waitView(t, n)
	t.Logf("%s: a fresh member's first view of %d partitions after %v (%v after its session came up)",
		group, n, loaded.Sub(reader.started).Round(time.Millisecond), loaded.Sub(reader.up).Round(time.Millisecond))
	v := reader.last
	reader.close()
	return v
}

func TestScaleMillionPartitions(t *testing.T) {
	scaleOnly(t)
	srv := zktest.Standalone(t, zktest.Options{})
	v := storeAndLoad(t, srv, "scale-million", denseTopics(1000, 1000))
	if len(v.Partitions) != 1_000_000 || !slices.IsSortedFunc(v.Partitions, rebalance.Compare) {
		t.Fatalf("view has %d partitions, sorted %v", len(v.Partitions), slices.IsSortedFunc(v.Partitions, rebalance.Compare))
	}

	// A change to every topic: 1,000 data watches fire at a member.
	paths := zkpath.Group{Root: "/zkalloc", Group: "scale-million"}
	reader, writer := runSet(t, srv.Addr(), paths), runSet(t, srv.Addr(), paths)
	reader.waitView(t, 1_000_000)
	more := make(map[string][]int32, 1000)
	for topic := range denseTopics(1000, 0) {
		more[topic] = []int32{1000}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := writer.set.Add(ctx, more); err != nil {
		t.Fatal(err)
	}
	stored := time.Since(start)
	seen := reader.waitView(t, 1_001_000).Sub(start)
	t.Logf("one ID added to each of the 1,000 topics in %v; another member's view had them after %v", stored.Round(time.Millisecond), seen.Round(time.Millisecond))
	reader.close()
	writer.close()
	for _, s := range []rebalance.Strategy{rebalance.Balanced, rebalance.RoundRobin} {
		for _, m := range []int{10, 100, 1000} {
			members := make([]string, m)
			for i := range members {
				members[i] = fmt.Sprintf("m%04d", i)
			}
			best := time.Duration(1<<63 - 1)
			for range 3 {
				runtime.GC()
				start := time.Now()
				got, err := rebalance.Compute(s, members, v.Partitions)
				best = min(best, time.Since(start))
				if err != nil {
					t.Fatal(err)
				}
				total := 0
				for _, ps := range got {
					total += len(ps)
				}
				if total != len(v.Partitions) {
					t.Fatalf("%s over %d members assigned %d partitions", s.Name(), m, total)
				}
			}
			t.Logf("rebalance.Compute(%s) of 1,000,000 partitions over %d members: %v (best of 3, validation included)",
				s.Name(), m, best.Round(100*time.Microsecond))
		}
	}
}

func TestScaleSparseTopic(t *testing.T) {
	scaleOnly(t)
	srv := zktest.Standalone(t, zktest.Options{})
	v := storeAndLoad(t, srv, "scale-sparse", map[string][]int32{"sparse": idRange(0, 100_000, 2)})
	if len(v.Partitions) != 50_000 || v.Partitions[1].ID != 2 {
		t.Fatalf("view has %d partitions", len(v.Partitions))
	}
}

// heapInuse returns runtime.MemStats.HeapInuse after a collection.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// writeHeapProfile writes the heap profile to path, for
// `go tool pprof -sample_index=inuse_space`.
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
}

// serverStats returns the lines of ZooKeeper's mntr report about its data.
func serverStats(t *testing.T, srv *zklaunch.Server) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := zktest.FourLetter(ctx, srv.Addr(), "mntr")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(reply, "\n") {
		for _, key := range []string{"zk_znode_count", "zk_ephemerals_count", "zk_approximate_data_size", "zk_avg_latency", "zk_max_latency", "zk_outstanding_requests"} {
			if strings.HasPrefix(line, key+"\t") {
				out = append(out, strings.Replace(line, "\t", "=", 1))
			}
		}
	}
	return strings.Join(out, " ")
}

// startGroup starts n members of g, batch at a time concurrently, and
// adds them to g.members. It returns how long the starts took.
func startGroup(t *testing.T, g *benchGroup, n, batch int) time.Duration {
	t.Helper()
	start := time.Now()
	for first := 0; first < n; first += batch {
		ms := make([]*benchMember, min(batch, n-first))
		errs := make([]error, len(ms))
		var wg sync.WaitGroup
		for i := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ms[i], errs[i] = g.start(fmt.Sprintf("m%04d", len(g.members)+i))
			}()
		}
		wg.Wait()
		for i, m := range ms {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			g.members = append(g.members, m)
		}
	}
	return time.Since(start)
}

// closeGroup closes every member of g, batch at a time concurrently.
func closeGroup(g *benchGroup, batch int) time.Duration {
	start := time.Now()
	for first := 0; first < len(g.members); first += batch {
		var wg sync.WaitGroup
		for _, m := range g.members[first:min(first+batch, len(g.members))] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.close()
			}()
		}
		wg.Wait()
	}
	g.members = nil
	return time.Since(start)
}

// awaitConverged is benchGroup.waitConverged with a longer deadline.
func awaitConverged(t *testing.T, g *benchGroup, start time.Time, within time.Duration) time.Duration {
	t.Helper()
	deadline := time.After(within)
	for {
		if last, ok := g.converged(); ok {
			return last.Sub(start)
		}
		select {
		case <-g.wake:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no convergence within %v: %s%s", within, divergence(g), unassigned(t, g))
		}
	}
}

// unassigned lists the partitions that no member's last update has, with
// the member that should have it and the holder of its claim.
func unassigned(t *testing.T, g *benchGroup) string {
	owner := map[rebalance.Partition]int{}
	var names []string
	for i, m := range g.members {
		m.mu.Lock()
		for _, p := range m.last.Assigned {
			owner[p] = i
		}
		if i == 0 {
			names = m.last.Members
		}
		m.mu.Unlock()
	}
	if len(owner) == g.want {
		return ""
	}
	paths := zkpath.Group{Root: "/zkalloc", Group: g.group}
	r := runSet(t, g.servers[0], paths)
	defer r.close()
	r.waitView(t, g.want)
	target, err := rebalance.Compute(g.strategy, names, r.last.Partitions)
	if err != nil {
		return err.Error()
	}
	var out []string
	for m, ps := range target {
		for _, p := range ps {
			if _, ok := owner[p]; ok || len(out) >= 10 {
				continue
			}
			holder, _, err := r.conn.Get(paths.Owners() + "/" + p.String())
			var self zkalloc.Update
			for _, bm := range g.members {
				if bm.name == m {
					self = bm.alloc.Current()
				}
			}
			out = append(out, fmt.Sprintf("%s: target %s (its current update: %d assigned, %q), claim held by %q (%v)",
				p, m, len(self.Assigned), self.Reason, holder, err))
		}
	}
	return "; unassigned: " + strings.Join(out, "; ")
}

// divergence summarizes how the members' last updates differ.
func divergence(g *benchGroup) string {
	gens := map[int64]int{}
	sizes := map[int]int{}
	assigned := 0
	var first int64
	var odd []string
	for i, m := range g.members {
		m.mu.Lock()
		u := m.last
		m.mu.Unlock()
		gens[u.Generation]++
		sizes[len(u.Members)]++
		assigned += len(u.Assigned)
		if i == 0 {
			first = u.Generation
		}
		if len(odd) < 5 && (len(u.Members) != len(g.members) || u.Generation != first) {
			cur := m.alloc.Current()
			odd = append(odd, fmt.Sprintf("member %d: received generation %d, %d members, %d assigned (%s); current generation %d, %d members, %d assigned (%s)",
				i, u.Generation, len(u.Members), len(u.Assigned), u.Reason, cur.Generation, len(cur.Members), len(cur.Assigned), cur.Reason))
		}
	}
	return fmt.Sprintf("generations %v; member counts %v; %d of %d partitions assigned; %s", gens, sizes, assigned, g.want, strings.Join(odd, "; "))
}

func newScaleGroup(t *testing.T, srv *zklaunch.Server, name string, parts map[string][]int32, settle time.Duration) *benchGroup {
	want := 0
	for _, ids := range parts {
		want += len(ids)
	}
	// The set is stored beforehand, so the members need no seed (a seed
	// would be kept in each member's config).
	paths := zkpath.Group{Root: "/zkalloc", Group: name}
	writer := runSet(t, srv.Addr(), paths)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := writer.set.Add(ctx, parts); err != nil {
		t.Fatal(err)
	}
	writer.close()
	g := &benchGroup{
		b:        t,
		strategy: rebalance.Balanced,
		servers:  []string{srv.Addr()},
		group:    name,
		want:     want,
		settle:   settle,
		wake:     make(chan struct{}, 1),
	}
	g.counted = zktest.StartTappedProxy(t, g.count, srv.Addr()).Addrs()
	return g
}

// TestScaleMemory measures the heap of allocators in a group of 100,000
// partitions (100 topics x 1,000), and how long their claims take: one
// member claims all 100,000, ten members 10,000 each.
func TestScaleMemory(t *testing.T) {
	scaleOnly(t)
	srv := zktest.Standalone(t, zktest.Options{})
	for _, n := range []int{1, 10} {
		t.Run(fmt.Sprintf("members=%d", n), func(t *testing.T) {
			g := newScaleGroup(t, srv, fmt.Sprintf("scale-mem-%d", n), denseTopics(100, 1000), 0)
			before := heapInuse()
			started := startGroup(t, g, n, n)
			converged := awaitConverged(t, g, time.Now().Add(-started), 5*time.Minute)
			after := heapInuse()
			if path := os.Getenv("ZKALLOC_SCALE_HEAPPROFILE"); path != "" {
				writeHeapProfile(t, fmt.Sprintf("%s.%d", path, n))
			}
			t.Logf("%d member(s) of 100,000 partitions started (each with %d claims) in %v, converged after %v; heap in use %.1f MiB per allocator; server: %s",
				n, 100_000/n, started.Round(time.Millisecond), converged.Round(time.Millisecond), float64(after-before)/float64(n)/(1<<20), serverStats(t, srv))
			// One more member: about 100,000/(n+1) claims are released,
			// each after its consumer acked, and created again.
			start := time.Now()
			g.join()
			t.Logf("one more member joined: converged after %v, about %d claims handed off", awaitConverged(t, g, start, 5*time.Minute).Round(time.Millisecond), 100_000/(n+1))
			closed := closeGroup(g, n)
			t.Logf("closed in %v; server: %s", closed.Round(time.Millisecond), serverStats(t, srv))
		})
	}
}

// TestScaleThousandMembers starts 1,000 members, each with its own session,
// in a group of 10,000 partitions, waits for them to converge, then
// measures a few joins and leaves.
func TestScaleThousandMembers(t *testing.T) {
	scaleOnly(t)
	members, batch, changes := 1000, 1000, 5
	if s := os.Getenv("ZKALLOC_SCALE_MEMBERS"); s != "" {
		fmt.Sscan(s, &members)
	}
	if s := os.Getenv("ZKALLOC_SCALE_BATCH"); s != "" {
		fmt.Sscan(s, &batch)
	}
	settle := 0 * time.Millisecond
	if s := os.Getenv("ZKALLOC_SCALE_SETTLE"); s != "" {
		var err error
		if settle, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	srv := zktest.Standalone(t, zktest.Options{})
	g := newScaleGroup(t, srv, "scale-members", denseTopics(10, 1000), settle)
	g.startTimeout = 10 * time.Minute
	defer closeGroup(g, batch)

	before := heapInuse()
	start := time.Now()
	started := startGroup(t, g, members, batch)
	t.Logf("%d members started (%d at a time) in %v; %d requests so far", members, batch, started.Round(time.Millisecond), g.all.Load())
	converged := awaitConverged(t, g, start, started+3*time.Minute)
	t.Logf("converged %v after the first start (%v after the last); %d requests in all (%d on claims); heap in use %.2f MiB per member; %d goroutines; server: %s",
		converged.Round(time.Millisecond), (converged - started).Round(time.Millisecond), g.all.Load(), g.claims.Load(),
		float64(heapInuse()-before)/float64(members)/(1<<20), runtime.NumGoroutine(), serverStats(t, srv))

	var joins, leaves []time.Duration
	all, claims := g.all.Load(), g.claims.Load()
	cpu := cpuTime(t)
	for range changes {
		start := time.Now()
		g.join()
		joins = append(joins, awaitConverged(t, g, start, 5*time.Minute))
		leaver := g.members[len(g.members)-1]
		g.members = g.members[:len(g.members)-1]
		start = time.Now()
		leaver.close()
		leaves = append(leaves, awaitConverged(t, g, start, 5*time.Minute))
	}
	n := float64(2 * changes * members)
	slices.Sort(joins)
	slices.Sort(leaves)
	t.Logf("join: %v; leave: %v; requests per member per change %.2f (%.2f without claims); CPU of this process per member per change %v",
		joins, leaves, float64(g.all.Load()-all)/n, float64(g.all.Load()-all-(g.claims.Load()-claims))/n,
		((cpuTime(t) - cpu) / time.Duration(n)).Round(time.Microsecond))
	closed := closeGroup(g, batch)
	t.Logf("closed in %v", closed.Round(time.Millisecond))
}

// cpuTime returns the CPU time, user and system, this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
