package zkalloc_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// TestDisconnectGraceLeaseNeedsAQuorum: with DisconnectGrace, a member's
// session lease is renewed only by transactions the ensemble commits (a
// multi that checks the group's node, every T/4: see internal/zksession/lease.go),
// which a leader cut off from its quorum cannot commit; without a grace,
// by syncs, which commit nothing. Two idle members, one with a grace and
// one without, each on a server of its own: while the first one's server
// commits six transactions, the second one's commits none.
func TestDisconnectGraceLeaseNeedsAQuorum(t *testing.T) {
	t.Parallel()
	seed := map[string][]int32{"t": ids(2)}
	start := func(grace time.Duration) (addr string, zxid func() int64) {
		srv := server(t)
		c := newCluster(t, []string{srv.Addr()})
		cfg := c.config("m", seed)
		cfg.DisconnectGrace = grace
		c.start(cfg)
		c.waitConverged(actortest.PartsN("t", 2))
		return srv.Addr(), func() int64 { return lastZxid(t, srv.Addr()) }
	}
	_, graceZxid := start(time.Second)
	_, plainZxid := start(0)
	grace0, plain0 := graceZxid(), plainZxid()
	waitFor(t, testTimeout, func() string {
		if n := graceZxid() - grace0; n < 6 {
			return fmt.Sprintf("the member with a grace: %d transactions, want 6", n)
		}
		return ""
	})
	if n := plainZxid() - plain0; n > 0 {
		t.Errorf("the member without a grace: %d transactions meanwhile, want none (its lease syncs)", n)
	}
}

// lastZxid reads the last zxid the server at addr processed, from srvr.
func lastZxid(t *testing.T, addr string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := zktest.FourLetter(ctx, addr, "srvr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no Zxid in srvr's reply %q", reply)
	return 0
}
