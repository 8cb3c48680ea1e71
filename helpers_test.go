package zkalloc_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every wait for the group to converge.
const testTimeout = 30 * time.Second

// pollInterval is how often a wait re-checks its condition.
const pollInterval = 10 * time.Millisecond

// sessionTimeout is short so that faults play out quickly; the test
// servers run with a 500ms tick, which allows 1s to 10s.
const sessionTimeout = 2 * time.Second

// member is one allocator under test with a consumer that records the
// updates it receives.
type member struct {
	name  string
	alloc *zkalloc.Allocator

	mu       sync.Mutex
	latest   zkalloc.Update
	received int
	owned    map[zkalloc.Partition]bool // as the consumer tracks it from Added and Revoked
	changed  chan struct{}              // closed and replaced on every update
	done     chan struct{}              // closed when Updates is closed
}

// cluster is a group of members on one ZooKeeper.
type cluster struct {
	t       *testing.T
	servers []string
	group   string
	mu      sync.Mutex
	members map[string]*member
}

func newCluster(t *testing.T, servers []string) *cluster {
	return &cluster{t: t, servers: servers, group: strings.ReplaceAll(t.Name(), "/", "_"), members: map[string]*member{}}
}

// config returns the usual config of a member of the cluster.
func (c *cluster) config(name string, seed map[string][]int32) zkalloc.Config {
	return zkalloc.Config{
		Servers:        c.servers,
		Group:          c.group,
		Member:         name,
		Partitions:     seed,
		SessionTimeout: sessionTimeout,
		Logger:         testLogger(),
	}
}

// testLogger logs to stderr at the level in ZKALLOC_TEST_LOG (debug, info,
// warn, error); by default only errors.
func testLogger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("ZKALLOC_TEST_LOG"))); err != nil {
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// start starts a member and a consumer that records its updates. The
// member is closed when the test ends.
func (c *cluster) start(cfg zkalloc.Config) *member {
	c.t.Helper()
	m, err := c.tryStart(cfg)
	if err != nil {
		c.t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return m
}

func (c *cluster) tryStart(cfg zkalloc.Config) (*member, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return c.tryStartCtx(ctx, cfg)
}

// tryStartCtx is tryStart with Start bounded by ctx.
func (c *cluster) tryStartCtx(ctx context.Context, cfg zkalloc.Config) (*member, error) {
	c.t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		return nil, err
	}
	m := &member{name: cfg.Member, alloc: alloc, owned: map[zkalloc.Partition]bool{}, changed: make(chan struct{}), done: make(chan struct{})}
	go m.consume()
	c.t.Cleanup(func() { alloc.Close(); <-m.done })
	if err := alloc.Start(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.members[cfg.Member] = m
	c.mu.Unlock()
	return m, nil
}

// stop closes a member and forgets it.
func (c *cluster) stop(m *member) {
	c.t.Helper()
	if err := m.alloc.Close(); err != nil {
		c.t.Errorf("Close %s: %v", m.name, err)
	}
	<-m.done
	c.mu.Lock()
	delete(c.members, m.name)
	c.mu.Unlock()
}

func (m *member) consume() {
	defer close(m.done)
	for u := range m.alloc.Updates() {
		m.mu.Lock()
		for _, p := range u.Revoked {
			delete(m.owned, p)
		}
		u.Ack()
		for _, p := range u.Added {
			m.owned[p] = true
		}
		m.latest = u
		m.received++
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	}
}

// snapshot returns the latest update received and a channel closed at the
// next one.
func (m *member) snapshot() (zkalloc.Update, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest, m.changed
}

// converged checks that every member of the cluster received the same
// generation and member list, that none has partitions pending, and that
// their Assigned lists cover want exactly once. It returns what is wrong,
// or "".
func (c *cluster) converged(want []zkalloc.Partition) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.members))
	for name := range c.members {
		names = append(names, name)
	}
	slices.Sort(names)
	var gen int64
	owner := map[zkalloc.Partition]string{}
	for i, name := range names {
		m := c.members[name]
		u, _ := m.snapshot()
		if i == 0 {
			gen = u.Generation
		} else if u.Generation != gen {
			return fmt.Sprintf("%s is at generation %d, %s at %d", name, u.Generation, names[0], gen)
		}
		if !slices.Equal(u.Members, names) {
			return fmt.Sprintf("%s sees members %v, want %v", name, u.Members, names)
		}
		if !slices.IsSortedFunc(u.Assigned, comparePartitions) {
			return fmt.Sprintf("%s: Assigned not sorted: %v", name, u.Assigned)
		}
		if len(u.Pending) > 0 {
			return fmt.Sprintf("%s: still pending %v", name, u.Pending)
		}
		m.mu.Lock()
		consistent := len(m.owned) == len(u.Assigned)
		for _, p := range u.Assigned {
			consistent = consistent && m.owned[p]
		}
		m.mu.Unlock()
		if !consistent {
			return fmt.Sprintf("%s: Added/Revoked do not add up to Assigned %v", name, u.Assigned)
		}
		for _, p := range u.Assigned {
			if other, ok := owner[p]; ok {
				return fmt.Sprintf("%s assigned to both %s and %s", p, other, name)
			}
			owner[p] = name
		}
	}
	if len(owner) != len(want) {
		var b strings.Builder
		for _, name := range names {
			u, _ := c.members[name].snapshot()
			cur := c.members[name].alloc.Current()
			fmt.Fprintf(&b, "; %s has %v (current %v, %s)", name, u.Assigned, cur.Assigned, cur.Reason)
		}
		return fmt.Sprintf("%d partitions assigned, want %d%s", len(owner), len(want), b.String())
	}
	for _, p := range want {
		if _, ok := owner[p]; !ok {
			return fmt.Sprintf("%s assigned to nobody", p)
		}
	}
	return ""
}

// waitConverged waits until [cluster.converged] is satisfied and returns
// the common generation.
func (c *cluster) waitConverged(want []zkalloc.Partition) int64 {
	c.t.Helper()
	deadline := time.After(testTimeout)
	for {
		problem := c.converged(want)
		if problem == "" {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, m := range c.members {
				u, _ := m.snapshot()
				return u.Generation
			}
			return 0
		}
		select {
		case <-deadline:
			c.t.Fatalf("group did not converge within %v: %s", testTimeout, problem)
		case <-time.After(pollInterval):
		}
	}
}

func comparePartitions(a, b zkalloc.Partition) int {
	if a.Topic != b.Topic {
		return strings.Compare(a.Topic, b.Topic)
	}
	return int(a.ID) - int(b.ID)
}

func ids(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// server starts a standalone ZooKeeper for the test.
func server(t *testing.T) *zklaunch.Server {
	return zktest.Standalone(t, zktest.Options{})
}

// waitFor polls cond until it returns "" or the deadline passes; cond
// returns what is still wrong. Benchmarks use it too.
func waitFor(t testing.TB, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.After(within)
	for {
		problem := cond()
		if problem == "" {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("not within %v: %s", within, problem)
		case <-time.After(pollInterval):
		}
	}
}

// without returns ps minus drop.
func without(ps []zkalloc.Partition, drop ...zkalloc.Partition) []zkalloc.Partition {
	return slices.DeleteFunc(slices.Clone(ps), func(p zkalloc.Partition) bool { return slices.Contains(drop, p) })
}
