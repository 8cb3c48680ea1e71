package zkalloc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
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
	a := c.start(c.config("a", seed)) // the default, round-robin
	gen := c.waitConverged(actortest.PartsN("t", 4))

	cfg := c.config("b", seed)
	cfg.Strategy = rebalance.Range
	_, err := c.tryStart(cfg)
	if !errors.Is(err, zkalloc.ErrStrategyMismatch) || !strings.Contains(err.Error(), `member "a" runs strategy "round-robin"`) {
		t.Fatalf("Start with another strategy than the group's: %v", err)
	}
	if u := a.alloc.Current(); u.Generation != gen || len(u.Members) != 1 {
		t.Errorf("a's view moved to generation %#x with members %v; b should never have joined", u.Generation, u.Members)
	}

	c.start(c.config("b", seed))
	c.waitConverged(actortest.PartsN("t", 4))
}
