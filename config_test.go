package zkalloc_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The configuration: what New refuses, the bounds on names, a chroot in
// Servers, and the strategy a member starts with.

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
		{"topic with separators", func(c *zkalloc.Config) { c.Partitions = map[string][]int32{"events:1;audit": {2}} }, `Partitions: rebalance: invalid topic "events:1;audit": character ':' at byte 6`},
		{"negative session timeout", func(c *zkalloc.Config) { c.SessionTimeout = -time.Second }, "SessionTimeout"},
		{"negative settle", func(c *zkalloc.Config) { c.Settle = -1 }, "Settle"},
		{"negative release timeout", func(c *zkalloc.Config) { c.ReleaseTimeout = -time.Second }, "ReleaseTimeout"},
		{"negative disconnect grace", func(c *zkalloc.Config) { c.DisconnectGrace = -time.Second }, "DisconnectGrace"},
		{"negative weight", func(c *zkalloc.Config) { c.Weight = -1 }, "Weight -1: want 1 to 1000000"},
		{"weight too large", func(c *zkalloc.Config) { c.Weight = rebalance.MaxWeight + 1 }, "Weight 1000001"},
		{"weight with a stateless strategy", func(c *zkalloc.Config) { c.Weight, c.Strategy = 2, rebalance.Balanced }, "Weight 2: only the sticky strategy has weights, and Strategy is balanced"},
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

// TestChrootServerString runs two members of one group under a chroot, one
// given it per server, the other in a connect string, and looks from
// outside that every node of the group is under the chroot.
func TestChrootServerString(t *testing.T) {
	t.Parallel()
	srv := server(t)
	const chroot = "/kafka/team"
	c := newCluster(t, []string{srv.Addr() + chroot})
	c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	second := c.config("b", nil)
	second.Servers = []string{srv.Addr() + "," + srv.Addr() + chroot}
	c.start(second)
	c.waitConverged(actortest.PartsN("t", 4))

	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	dir := chroot + "/zkalloc/groups/" + c.group
	for _, p := range []string{dir + "/members/a", dir + "/members/b", dir + "/partitions/t", dir + "/owners/t:0", dir + "/owners/t:3"} {
		if ok, _, err := obs.Exists(p); err != nil || !ok {
			t.Errorf("Exists(%s) = %v, %v; want the node under the chroot", p, ok, err)
		}
	}
	if ok, _, err := obs.Exists("/zkalloc/groups/" + c.group); err != nil || ok {
		t.Errorf("Exists(/zkalloc/groups/%s) = %v, %v; want nothing outside the chroot", c.group, ok, err)
	}
}

// TestStartRefusesAnotherStrategy: a member configured with another
// strategy than its group's is refused at Start, with an error naming the
// member that disagrees, before it joins, so the group does not move. One
// with the group's strategy joins.
func TestStartRefusesAnotherStrategy(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": {0, 1, 2, 3}}
	a := c.start(c.config("a", seed)) // the default, sticky
	gen := c.waitConverged(actortest.PartsN("t", 4))

	cfg := c.config("b", seed)
	cfg.Strategy = rebalance.Range
	_, err := c.tryStart(cfg)
	if !errors.Is(err, zkalloc.ErrStrategyMismatch) || !strings.Contains(err.Error(), `member "a" runs strategy "sticky"`) {
		t.Fatalf("Start with another strategy than the group's: %v", err)
	}
	if u := a.alloc.Current(); u.Generation != gen || len(u.Members) != 1 {
		t.Errorf("a's view moved to generation %#x with members %v; b should never have joined", u.Generation, u.Members)
	}

	c.start(c.config("b", seed))
	c.waitConverged(actortest.PartsN("t", 4))
}

// TestDefaultStrategyIsSticky: a member started with the zero Strategy
// names "sticky" in its member node, with its weight when it has one. A
// group that runs Balanced, the default of earlier versions, refuses
// such a member at Start, and takes one that sets Balanced explicitly,
// as docs/operating.md's upgrade section says.
func TestDefaultStrategyIsSticky(t *testing.T) {
	t.Parallel()
	srv := server(t)
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	seed := map[string][]int32{"t": {0, 1, 2, 3}}

	t.Run("node", func(t *testing.T) {
		c := newCluster(t, []string{srv.Addr()})
		c.start(c.config("a", seed))
		path := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Member("a")
		data, _, err := obs.Get(path)
		if err != nil {
			t.Fatalf("Get(%s): %v", path, err)
		}
		if info, ok := membership.ParseInfo(data); !ok || info.Strategy != "sticky" || info.Weight != 0 {
			t.Errorf("member node %s = %s; want strategy %q and no weight", path, data, "sticky")
		}
		heavy := c.config("heavy", seed)
		heavy.Weight = 3
		c.start(heavy)
		data, _, err = obs.Get(zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Member("heavy"))
		if info, ok := membership.ParseInfo(data); err != nil || !ok || info.Weight != 3 {
			t.Errorf("heavy's member node = %s, %v; want weight 3", data, err)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		// A group that runs round-robin refuses a sticky member, and
		// takes one that names round-robin.
		c := newCluster(t, []string{srv.Addr()})
		old := c.config("old", seed)
		old.Strategy = rebalance.RoundRobin
		c.start(old)
		c.waitConverged(actortest.PartsN("t", 4))

		_, err := c.tryStart(c.config("new", seed))
		if !errors.Is(err, zkalloc.ErrStrategyMismatch) || !strings.Contains(err.Error(), `member "old" runs strategy "round-robin"`) ||
			!strings.Contains(err.Error(), "set Config.Strategy to it") {
			t.Fatalf("Start with the new default into a round-robin group: %v", err)
		}
		kept := c.config("new", seed)
		kept.Strategy = rebalance.RoundRobin
		c.start(kept)
		c.waitConverged(actortest.PartsN("t", 4))
	})
}

// TestRollingUpgradeFromBalanced: a group on balanced, the old default,
// upgraded member by member to the sticky default. While any member
// runs balanced, the sticky ones compute Balanced's assignment with it;
// once none does, the record goes on from there. Each member, restarted
// under its name, ends with the partitions Balanced gave it at first:
// the upgrade moves only the restarted members' own partitions.
func TestRollingUpgradeFromBalanced(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	const n = 30
	seed := map[string][]int32{"t": ids(n)}
	names := []string{"a", "b", "c"}
	ms := map[string]*member{}
	for _, name := range names {
		cfg := c.config(name, seed)
		cfg.Strategy = rebalance.Balanced
		ms[name] = c.start(cfg)
	}
	all := actortest.PartsN("t", n)
	c.waitConverged(all)
	before := map[string][]zkalloc.Partition{}
	for _, name := range names {
		before[name] = ms[name].alloc.Current().Assigned
	}
	for i, name := range names {
		c.stop(ms[name])
		c.waitConverged(all)
		live := slices.DeleteFunc(slices.Clone(names), func(o string) bool { return o == name })
		want, err := rebalance.Balanced.Assign(live, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range live {
			got := ms[o].alloc.Current().Assigned
			switch {
			case i < len(names)-1 && !slices.Equal(got, want[o]):
				// A member still runs balanced: everyone computes its
				// assignment.
				t.Errorf("%s away, balanced members left: %s has %v, want Balanced's %v", name, o, got, want[o])
			case i == len(names)-1 && len(without(before[o], got...)) > 0:
				// None does: the record goes on, moving only name's.
				t.Errorf("%s away, every member sticky: %s has %v, lost some of its own %v", name, o, got, before[o])
			}
		}
		ms[name] = c.start(c.config(name, seed)) // the default: sticky
		c.waitConverged(all)
		for _, o := range names {
			if got := ms[o].alloc.Current().Assigned; !slices.Equal(got, before[o]) {
				t.Errorf("after upgrading %s: %s has %v, want its own %v", name, o, got, before[o])
			}
		}
	}
	path := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Assignment()
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	if ok, _, err := obs.Exists(path); !ok || err != nil {
		t.Errorf("record head %s: %v, %v; want it written", path, ok, err)
	}
}
