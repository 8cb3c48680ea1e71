package zkalloc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestStartRefusesAnotherStrategy: a member configured with another
// strategy than its group's is refused at Start, with an error naming the
// member that disagrees, before it joins, so the group does not move. One
// with the group's strategy joins.
func TestStartRefusesAnotherStrategy(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": {0, 1, 2, 3}}
	a := c.start(c.config("a", seed)) // the default, balanced
	gen := c.waitConverged(actortest.PartsN("t", 4))

	cfg := c.config("b", seed)
	cfg.Strategy = rebalance.Range
	_, err := c.tryStart(cfg)
	if !errors.Is(err, zkalloc.ErrStrategyMismatch) || !strings.Contains(err.Error(), `member "a" runs strategy "balanced"`) {
		t.Fatalf("Start with another strategy than the group's: %v", err)
	}
	if u := a.alloc.Current(); u.Generation != gen || len(u.Members) != 1 {
		t.Errorf("a's view moved to generation %#x with members %v; b should never have joined", u.Generation, u.Members)
	}

	c.start(c.config("b", seed))
	c.waitConverged(actortest.PartsN("t", 4))
}

// TestDefaultStrategyIsBalanced: a member started with the zero Strategy
// names "balanced" in its member node. A group that runs RoundRobin, the
// default of earlier versions, refuses such a member at Start, and takes
// one that sets RoundRobin explicitly, as README's upgrade paragraph says.
func TestDefaultStrategyIsBalanced(t *testing.T) {
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
		if info, ok := membership.ParseInfo(data); !ok || info.Strategy != "balanced" {
			t.Errorf("member node %s = %s; want strategy %q", path, data, "balanced")
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		c := newCluster(t, []string{srv.Addr()})
		old := c.config("old", seed)
		old.Strategy = rebalance.RoundRobin
		c.start(old)
		c.waitConverged(actortest.PartsN("t", 4))

		_, err := c.tryStart(c.config("new", seed))
		if !errors.Is(err, zkalloc.ErrStrategyMismatch) || !strings.Contains(err.Error(), `member "old" runs strategy "round-robin"`) {
			t.Fatalf("Start with the new default into a round-robin group: %v", err)
		}
		kept := c.config("new", seed)
		kept.Strategy = rebalance.RoundRobin
		c.start(kept)
		c.waitConverged(actortest.PartsN("t", 4))
	})
}
