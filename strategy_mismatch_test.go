package zkalloc_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestStrategyMismatchIsLogged: two members of one group configured with
// different strategies disagree on the assignment, and each keeps
// partitions the other waits for. The one waiting logs an error, once the
// longest hand-off is over, naming the holder and both strategies.
func TestStrategyMismatchIsLogged(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": {0, 1, 2, 3}}

	cfg := c.config("a", seed)
	cfg.Strategy = rebalance.RoundRobin
	a := c.start(cfg)
	waitFor(t, testTimeout, func() string {
		if u, _ := a.snapshot(); len(u.Assigned) != 4 {
			return "a does not hold all four partitions yet"
		}
		return ""
	})

	// With members a and b, round-robin gives a t:0 and t:2, range gives
	// b t:2 and t:3: b waits for t:2, which a keeps.
	logs := actortest.NewLogs()
	cfg = c.config("b", seed)
	cfg.Strategy, cfg.ReleaseTimeout, cfg.Logger = rebalance.Range, time.Second, slog.New(logs)
	b := c.start(zkalloc.WithStuckMargin(cfg, 100*time.Millisecond))
	r := logs.Next(t, testTimeout)
	if r.Level != slog.LevelError || r.Attrs["holder"] != "a" || r.Attrs["first"] != "t:2" || r.Attrs["claims"] != "1" ||
		r.Attrs["strategy"] != "range" || r.Attrs["holder_strategy"] != "round-robin" {
		t.Errorf("b logged %+v; want an error on t:2, held by a, which runs round-robin", r)
	}
	if u, _ := b.snapshot(); !slices.Equal(u.Pending, []zkalloc.Partition{{Topic: "t", ID: 2}}) {
		t.Errorf("b's Pending = %v, want [t:2]", u.Pending)
	}
}
