package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	good := zkalloc.Config{Servers: []string{"127.0.0.1:2181"}, Group: "g", Member: "m"}
	tests := []struct {
		name   string
		change func(*zkalloc.Config)
		field  string
	}{
		{"no servers", func(c *zkalloc.Config) { c.Servers = nil }, "Servers"},
		{"blank server", func(c *zkalloc.Config) { c.Servers = []string{" "} }, "Servers[0]"},
		{"port not a number", func(c *zkalloc.Config) { c.Servers = []string{"127.0.0.1:abc"} }, `Servers[0] "127.0.0.1:abc"`},
		{"two ports", func(c *zkalloc.Config) { c.Servers = []string{"h:2181", "127.0.0.1:2181:9"} }, `Servers[1] "127.0.0.1:2181:9"`},
		{"port zero", func(c *zkalloc.Config) { c.Servers = []string{"h:0"} }, `Servers[0] "h:0"`},
		{"port too large", func(c *zkalloc.Config) { c.Servers = []string{"h:65536"} }, `Servers[0] "h:65536"`},
		{"signed port", func(c *zkalloc.Config) { c.Servers = []string{"h:+1"} }, `Servers[0] "h:+1"`},
		{"empty port", func(c *zkalloc.Config) { c.Servers = []string{"h:"} }, `Servers[0] "h:"`},
		{"no host", func(c *zkalloc.Config) { c.Servers = []string{":2181"} }, `Servers[0] ":2181"`},
		{"IPv6 without brackets", func(c *zkalloc.Config) { c.Servers = []string{"::1:2181"} }, `Servers[0] "::1:2181"`},
		{"unclosed bracket", func(c *zkalloc.Config) { c.Servers = []string{"[::1:2181"} }, `Servers[0] "[::1:2181"`},
		{"IPv4 in brackets", func(c *zkalloc.Config) { c.Servers = []string{"[127.0.0.1]:2181"} }, `Servers[0] "[127.0.0.1]:2181"`},
		{"junk after brackets", func(c *zkalloc.Config) { c.Servers = []string{"[::1]2181"} }, `Servers[0] "[::1]2181"`},
		{"chroots differ", func(c *zkalloc.Config) { c.Servers = []string{"a/x", "b/y"} }, `Servers[1] "b/y"`},
		{"chroots differ in a list", func(c *zkalloc.Config) { c.Servers = []string{"a/x,b/y"} }, `Servers[0] "a/x,b/y"`},
		{"chroot with trailing slash", func(c *zkalloc.Config) { c.Servers = []string{"a:2181/kafka/"} }, "Servers[0]"},
		{"chroot with empty part", func(c *zkalloc.Config) { c.Servers = []string{"a:2181/kafka//x"} }, "Servers[0]"},
		{"chroot in /zookeeper", func(c *zkalloc.Config) { c.Servers = []string{"a:2181/zookeeper"} }, "Servers[0]"},
		{"empty in a list", func(c *zkalloc.Config) { c.Servers = []string{"a:2181,,b:2181"} }, `Servers[0] "a:2181,,b:2181"`},
		{"empty group", func(c *zkalloc.Config) { c.Group = "" }, "Group"},
		{"group with slash", func(c *zkalloc.Config) { c.Group = "a/b" }, "Group"},
		{"group with control char", func(c *zkalloc.Config) { c.Group = "a\x01" }, "Group"},
		{"empty member", func(c *zkalloc.Config) { c.Member = "" }, "Member"},
		{"member with slash", func(c *zkalloc.Config) { c.Member = "x/y" }, "Member"},
		{"member with newline", func(c *zkalloc.Config) { c.Member = "x\ny" }, "Member"},
		{"member dot-dot", func(c *zkalloc.Config) { c.Member = ".." }, "Member"},
		{"group of 1,000 bytes", func(c *zkalloc.Config) { c.Group = strings.Repeat("g", 1000) }, "Group"},
		{"member of 1,000 bytes", func(c *zkalloc.Config) { c.Member = strings.Repeat("m", 1000) }, "Member"},
		{"member of 250 bytes", func(c *zkalloc.Config) { c.Member = strings.Repeat("m", 250) }, "Member"},
		{"relative root", func(c *zkalloc.Config) { c.Root = "zkalloc" }, "Root"},
		{"root with trailing slash", func(c *zkalloc.Config) { c.Root = "/zkalloc/" }, "Root"},
		{"root in /zookeeper", func(c *zkalloc.Config) { c.Root = "/zookeeper/x" }, "Root"},
		{"negative partition", func(c *zkalloc.Config) { c.Partitions = map[string][]int32{"t": {1, -1}} }, "Partitions"},
		{"bad topic", func(c *zkalloc.Config) { c.Partitions = map[string][]int32{"a/b": {1}} }, "Partitions"},
		{"negative session timeout", func(c *zkalloc.Config) { c.SessionTimeout = -time.Second }, "SessionTimeout"},
		{"negative settle", func(c *zkalloc.Config) { c.Settle = -1 }, "Settle"},
		{"negative release timeout", func(c *zkalloc.Config) { c.ReleaseTimeout = -time.Second }, "ReleaseTimeout"},
		{"negative disconnect grace", func(c *zkalloc.Config) { c.DisconnectGrace = -time.Second }, "DisconnectGrace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.change(&cfg)
			_, err := zkalloc.New(cfg)
			if !errors.Is(err, zkalloc.ErrInvalidConfig) {
				t.Fatalf("New() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("New() = %q, want the field %s named", err, tt.field)
			}
		})
	}
	if _, err := zkalloc.New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
}

// TestNewBoundsNames: Group and Member are bounded like Kafka's topic
// names, and the error names the field and the limit without quoting the
// whole name.
func TestNewBoundsNames(t *testing.T) {
	t.Parallel()
	good := zkalloc.Config{Servers: []string{"127.0.0.1:2181"}, Group: "g", Member: "m"}
	longest := strings.Repeat("ü", rebalance.MaxNameLen/2) + "x" // 249 bytes
	for _, field := range []string{"Group", "Member"} {
		set := func(c *zkalloc.Config, v string) {
			if field == "Group" {
				c.Group = v
			} else {
				c.Member = v
			}
		}
		cfg := good
		set(&cfg, longest)
		if _, err := zkalloc.New(cfg); err != nil {
			t.Errorf("New with a %s of %d bytes = %v", field, len(longest), err)
		}
		set(&cfg, strings.Repeat("n", 1000))
		_, err := zkalloc.New(cfg)
		if !errors.Is(err, zkalloc.ErrInvalidConfig) {
			t.Fatalf("New with a %s of 1,000 bytes = %v, want ErrInvalidConfig", field, err)
		}
		if msg := err.Error(); !strings.Contains(msg, field+" ") || !strings.Contains(msg, "1000 bytes") || !strings.Contains(msg, "249") || len(msg) > 300 {
			t.Errorf("New with a %s of 1,000 bytes = %q, want the field, the length and the limit of 249 named, briefly", field, msg)
		}
	}
}

func TestCloseWithoutStart(t *testing.T) {
	t.Parallel()
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddPartitions(context.Background(), map[string][]int32{"t": {1}}); !errors.Is(err, zkalloc.ErrNotStarted) {
		t.Errorf("AddPartitions before Start = %v, want ErrNotStarted", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, ok := <-a.Updates(); ok {
		t.Fatal("Updates() delivered after Close")
	}
	if err := a.Start(context.Background()); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
}

func TestStartGivesUpWithContext(t *testing.T) {
	t.Parallel()
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := a.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start with no server = %v, want DeadlineExceeded", err)
	}
	if _, ok := <-a.Updates(); ok {
		t.Fatal("Updates() delivered after a failed Start")
	}
}

func TestStartSaysWhyThereIsNoSession(t *testing.T) {
	t.Parallel()
	refused := closedPort(t)
	logs := actortest.NewLogs()
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{refused}, Group: "g", Member: "m", Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = a.Start(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start against a refused port = %v, want DeadlineExceeded", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "no session with "+refused) {
		t.Errorf("Start against a refused port = %q, want it to name %s and the refusal", err, refused)
	}
	// The first failure is a warning at once; the next ones within 10 s are not.
	var warned []actortest.Record
	for range logs.Count() {
		if r := logs.Next(t, time.Second); strings.Contains(r.Msg, "cannot connect") {
			warned = append(warned, r)
		}
	}
	if len(warned) != 1 || warned[0].Level != slog.LevelWarn || warned[0].Attrs["server"] != refused || !strings.Contains(warned[0].Attrs["err"], "refused") {
		t.Errorf("warnings about connecting: %+v; want one, naming %s and the refusal", warned, refused)
	}
}

// closedPort returns a loopback address on which nothing listens: a port
// that was just free.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestFiveMembersConverge(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	want := append(actortest.PartsN("events", 30), actortest.PartsN("logs", 7)...)
	for i := range 5 {
		c.start(c.config(fmt.Sprintf("m%d", i), map[string][]int32{"events": ids(30), "logs": ids(7)}))
	}
	if gen := c.waitConverged(want); gen <= 0 {
		t.Errorf("generation = %d, want a zxid", gen)
	}
	for _, m := range c.members {
		if cur := m.alloc.Current(); cur.Generation <= 0 || len(cur.Members) != 5 {
			t.Errorf("%s: Current() = %+v, want a computed snapshot", m.name, cur)
		}
	}
}

func TestDuplicateMemberRefused(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	first := c.start(c.config("same", map[string][]int32{"t": ids(4)}))

	_, err := c.tryStart(c.config("same", nil))
	if !errors.Is(err, zkalloc.ErrDuplicateMember) {
		t.Fatalf("Start of a second %q = %v, want ErrDuplicateMember", "same", err)
	}
	// The first keeps its name and its partitions.
	c.waitConverged(actortest.PartsN("t", 4))
	if u, _ := first.snapshot(); len(u.Assigned) != 4 {
		t.Errorf("first member has %v after the duplicate was refused, want all 4", u.Assigned)
	}
}

func TestGracefulLeaveHandsOver(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	want := actortest.PartsN("t", 12)
	var ms []*member
	for i := range 3 {
		cfg := c.config(fmt.Sprintf("m%d", i), map[string][]int32{"t": ids(12)})
		cfg.SessionTimeout = 10 * time.Second // a leave must not wait for it
		ms = append(ms, c.start(cfg))
	}
	c.waitConverged(want)

	c.stop(ms[1])
	start := time.Now()
	c.waitConverged(want)
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("hand-over after a graceful leave took %v, as long as a session timeout", took)
	}
	if u, _ := ms[1].snapshot(); u.Generation == 0 {
		t.Error("the leaver never received an update")
	}
	if err := ms[1].alloc.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if err := ms[1].alloc.AddPartitions(context.Background(), map[string][]int32{"t": {99}}); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("AddPartitions after Close = %v, want ErrClosed", err)
	}
}

func TestAddAndRemovePartitions(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	a := c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	c.start(c.config("b", nil))
	c.start(c.config("c", map[string][]int32{"t": {2, 3, 4}}))
	want := actortest.PartsN("t", 5)
	c.waitConverged(want)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.alloc.AddPartitions(ctx, map[string][]int32{"u": {0, 1, 2}, "t": {10}}); err != nil {
		t.Fatalf("AddPartitions: %v", err)
	}
	want = append(want, zkalloc.Partition{Topic: "t", ID: 10})
	want = append(want, actortest.PartsN("u", 3)...)
	c.waitConverged(want)

	b := c.members["b"]
	if err := b.alloc.RemovePartitions(ctx, map[string][]int32{"t": {0, 10, 77}, "u": {0, 1, 2}}); err != nil {
		t.Fatalf("RemovePartitions: %v", err)
	}
	want = without(actortest.PartsN("t", 5), zkalloc.Partition{Topic: "t", ID: 0})
	c.waitConverged(want)

	if err := b.alloc.AddPartitions(ctx, map[string][]int32{"t": {-1}}); err == nil {
		t.Error("AddPartitions with a negative ID succeeded")
	}
}

// TestCutOffMemberIsReplacedAndRejoins black-holes one member's connection:
// it must revoke everything, the others must take over once its session
// expires, and it must rejoin with a new session when the network returns.
func TestCutOffMemberIsReplacedAndRejoins(t *testing.T) {
	t.Parallel()
	srv := server(t)
	proxy := zktest.StartProxy(t, srv.Addr())
	c := newCluster(t, []string{srv.Addr()})
	want := actortest.PartsN("t", 9)
	c.start(c.config("a", map[string][]int32{"t": ids(9)}))
	c.start(c.config("b", nil))
	cutCfg := c.config("cut", nil)
	cutCfg.Servers = proxy.Addrs()
	cut := c.start(cutCfg)
	c.waitConverged(want)

	proxy.Blackhole(true)
	waitFor(t, testTimeout, func() string {
		if u, _ := cut.snapshot(); len(u.Assigned) > 0 {
			return fmt.Sprintf("cut-off member still has %v", u.Assigned)
		}
		return ""
	})
	// The rest converge without it once its session has expired.
	c.mu.Lock()
	delete(c.members, "cut")
	c.mu.Unlock()
	c.waitConverged(want)

	proxy.Blackhole(false)
	c.mu.Lock()
	c.members["cut"] = cut
	c.mu.Unlock()
	c.waitConverged(want)
	if u, _ := cut.snapshot(); len(u.Assigned) == 0 {
		t.Errorf("rejoined member got nothing: %+v", u)
	}
}

func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	want := actortest.PartsN("t", 8)
	for _, name := range []string{"a", "b", "c"} {
		c.start(c.config(name, map[string][]int32{"t": ids(8)}))
	}
	gen := c.waitConverged(want)

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	// Every member stops work while ZooKeeper is away.
	waitFor(t, testTimeout, func() string {
		for _, m := range c.members {
			if u, _ := m.snapshot(); len(u.Assigned) > 0 {
				return fmt.Sprintf("%s still has %v with ZooKeeper down", m.name, u.Assigned)
			}
		}
		return ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.waitConverged(want); got < gen {
		t.Errorf("generation went back from %d to %d", gen, got)
	}
}

func TestUpdatesSortedAndClosed(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	m := c.start(c.config("solo", map[string][]int32{"b": {10, 2, 1}, "a": {3}}))
	want := []zkalloc.Partition{{Topic: "a", ID: 3}, {Topic: "b", ID: 1}, {Topic: "b", ID: 2}, {Topic: "b", ID: 10}}
	c.waitConverged(want)
	u, _ := m.snapshot()
	if !slices.Equal(u.Assigned, want) {
		t.Errorf("Assigned = %v, want %v (topic, then numeric order)", u.Assigned, want)
	}
	c.stop(m)
	select {
	case <-m.done:
	case <-time.After(testTimeout):
		t.Fatal("Updates() not closed after Close")
	}
}
