package integration_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// serverCPU returns the CPU time used so far by the java processes this
// process started (the test's ZooKeeper servers), or 0 if /proc does not
// tell.
func serverCPU() time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(java") {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+k) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return total
}

// joinMember is a member of a large group whose consumer keeps only its
// latest Update and when it came: checking 100,000 partitions on every
// Update would measure the test.
type joinMember struct {
	alloc *zkalloc.Allocator
	mu    sync.Mutex
	last  zkalloc.Update
	at    time.Time
	wake  chan struct{}
	done  chan struct{}
}

func startJoinMember(t testing.TB, cfg zkalloc.Config, count *benchGroup) (*joinMember, time.Duration) {
	t.Helper()
	cfg.Servers = zktest.StartTappedProxy(t, count.count, cfg.Servers...).Addrs()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &joinMember{alloc: alloc, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for u := range alloc.Updates() {
			u.Ack()
			m.mu.Lock()
			m.last, m.at = u, time.Now()
			m.mu.Unlock()
			select {
			case m.wake <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(m.close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return m, time.Since(began)
}

func (m *joinMember) close() {
	m.alloc.Close()
	<-m.done
}

func (m *joinMember) latest() (zkalloc.Update, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.at
}

// awaitSplit waits until the members' latest Updates are of one
// generation, list every member, have nothing pending and assign want
// partitions in all, and returns when the last of them arrived. It then
// checks that no partition is assigned twice.
func awaitSplit(t testing.TB, ms []*joinMember, want int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.After(within)
	for {
		var last time.Time
		var gen int64
		n, ok := 0, true
		for i, m := range ms {
			u, at := m.latest()
			if i == 0 {
				gen = u.Generation
			}
			ok = ok && u.Generation == gen && len(u.Members) == len(ms) && len(u.Pending) == 0
			n += len(u.Assigned)
			if at.After(last) {
				last = at
			}
		}
		if ok && n == want {
			seen := make(map[zkalloc.Partition]bool, want)
			for _, m := range ms {
				u, _ := m.latest()
				for _, p := range u.Assigned {
					if seen[p] {
						t.Fatalf("%s assigned twice", p)
					}
					seen[p] = true
				}
			}
			return last
		}
		select {
		case <-ms[len(ms)-1].wake:
		case <-ms[0].wake:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			u, _ := ms[len(ms)-1].latest()
			t.Fatalf("no hand-off within %v: %d of %d assigned; the newest member has %d assigned, %d pending (%s)", within, n, want, len(u.Assigned), len(u.Pending), u.Reason)
		}
	}
}

// joinLarge starts a member holding every partition of a group of
// topics × perTopic partitions, waits until it holds them, then starts a
// second one. It returns how long the second one's Start took and how
// long after Start returned the hand-off of half the claims completed.
func joinLarge(t testing.TB, addr, group string, topics, perTopic int) (start, handoff time.Duration) {
	seed := make(map[string][]int32, topics)
	for i := range topics {
		seed[fmt.Sprintf("t%03d", i)] = ids(perTopic)
	}
	total := topics * perTopic
	cfg := func(name string) zkalloc.Config {
		return zkalloc.Config{Servers: []string{addr}, Group: group, Member: name, Partitions: seed, Logger: testLogger()}
	}
	var ca, cb benchGroup
	a, _ := startJoinMember(t, cfg("a"), &ca)
	awaitSplit(t, []*joinMember{a}, total, 2*time.Minute)

	java := serverCPU()
	reqA, claimsA := ca.all.Load(), ca.claims.Load()
	b, start := startJoinMember(t, cfg("b"), &cb)
	returned := time.Now()
	first := b.alloc.Current()
	if first.Generation == 0 || len(first.Members) != 2 || len(first.Assigned)+len(first.Pending) == 0 {
		t.Fatalf("Start returned without an Update giving the newcomer a share: generation %d, members %v, %d assigned, %d pending",
			first.Generation, first.Members, len(first.Assigned), len(first.Pending))
	}
	t.Logf("Start of the second member took %v; its first Update: %d assigned, %d pending (%s)",
		start.Round(time.Millisecond), len(first.Assigned), len(first.Pending), first.Reason)
	done := awaitSplit(t, []*joinMember{a, b}, total, 2*time.Minute)
	handoff = max(done.Sub(returned), 0)
	t.Logf("hand-off of about %d claims complete %v after Start returned; requests: the holder %d (%d on claims), the newcomer %d (%d on claims); ZooKeeper's CPU %v",
		total/2, handoff.Round(time.Millisecond), ca.all.Load()-reqA, ca.claims.Load()-claimsA, cb.all.Load(), cb.claims.Load(), serverCPU()-java)
	b.close()
	a.close()
	return start, handoff
}

// TestFastJoin checks that a member joining a group of 100,000 partitions
// (10,000 with -short, 1,000 times $ZKALLOC_FASTJOIN_TOPICS if set) held
// by another member returns from Start with its
// first Update, the share it is to take listed in Pending, and that the
// hand-off then completes. It logs both times and the requests; it asserts
// only generous bounds, the machine being shared (BenchmarkFastJoin
// reports the times).
func TestFastJoin(t *testing.T) {
	topics := 100
	if testing.Short() {
		topics = 10
	}
	if s := os.Getenv("ZKALLOC_FASTJOIN_TOPICS"); s != "" { // 200: the 200,000
		fmt.Sscan(s, &topics)
	}
	srv := server(t)
	start, handoff := joinLarge(t, srv.Addr(), "fastjoin", topics, 1000)
	if start > 30*time.Second {
		t.Errorf("Start took %v", start)
	}
	_ = handoff // bounded by awaitSplit
}

// BenchmarkFastJoin reports how long a member joining a group of 100,000
// partitions held by one member takes in Start, and how long after Start
// the hand-off of the 50,000 claims it takes over completes. The server
// runs on the JVM's defaults, as in production (jvm=default), or on the
// small JVM the tests use (jvm=small). Build without -race for figures a
// user would see (in integration/):
//
//	go test -run XXX -bench FastJoin/jvm=default -benchtime 3x .
func BenchmarkFastJoin(b *testing.B) {
	for _, jvm := range []struct {
		name     string
		defaults bool
	}{{"default", true}, {"small", false}} {
		b.Run("jvm="+jvm.name, func(b *testing.B) {
			srv := zktest.Standalone(b, zktest.Options{DefaultJVM: jvm.defaults})
			var starts, handoffs []time.Duration
			for i := range b.N {
				start, handoff := joinLarge(b, srv.Addr(), fmt.Sprintf("fastjoin-%d", i), 100, 1000)
				starts, handoffs = append(starts, start), append(handoffs, handoff)
			}
			report(b, "start", starts)
			report(b, "handoff", handoffs)
		})
	}
}
