package zkalloc_test

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// Close returns while the network stays dark, even when the claims actor
// is in the middle of taking claims over. A member joins a group whose
// partitions another holds; Start returns while its claims actor still
// works through the take-over, and then its network goes dark for good,
// as for a crashed member's. The claims actor's next requests wait in the
// session layer for a connection that never comes. Close used to stop the
// session only after every actor had returned, so it waited for ever for
// the claims actor (found by the chaos test: Close on a crashed member
// hung for 14 minutes). The session now goes once the member loop has
// drained, which fails those requests.
func TestCloseReturnsWhileTheNetworkIsDark(t *testing.T) {
	t.Parallel()
	srv := server(t)
	proxy := zktest.StartProxy(t, srv.Addr())
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(20_000)}
	c.start(c.config("b", seed))
	waitFor(t, testTimeout, func() string {
		if u := c.members["b"].alloc.Current(); len(u.Assigned) != 20_000 {
			return "b holds not all partitions yet"
		}
		return ""
	})
	cfg := c.config("a", nil)
	cfg.Servers = proxy.Addrs()
	a := c.start(cfg)
	proxy.Blackhole(true)
	defer proxy.Blackhole(false)
	closed := make(chan error, 1)
	began := time.Now()
	go func() { closed <- a.alloc.Close() }()
	select {
	case <-closed:
		t.Logf("Close returned after %v, the network dark", time.Since(began).Round(time.Millisecond))
	case <-time.After(6 * sessionTimeout):
		t.Fatalf("Close has not returned %v after it was called, the network dark", 6*sessionTimeout)
	}
}
