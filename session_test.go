package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// The session: a Start that gets none, a member cut off and back, a
// server restart, and the lease with DisconnectGrace.

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
	if s := cut.alloc.Stats(); s.SessionsLost != 1 || s.RevokedLost == 0 {
		t.Errorf("rejoined member's Stats %+v, want one session lost and its partitions revoked as lost", s)
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

// A server that grants another session timeout than the one asked for:
// the member logs both, once, and Stats shows the granted one.
func TestGrantedSessionTimeout(t *testing.T) {
	t.Parallel()
	const granted = 4 * time.Second
	srv := zktest.Standalone(t, zktest.Options{MinSessionTimeout: granted})
	c := newCluster(t, []string{srv.Addr()})
	logs := actortest.NewLogs()
	cfg := c.config("a", map[string][]int32{"t": ids(2)})
	cfg.Logger = slog.New(logs)
	a, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.SessionTimeout != 0 {
		t.Errorf("Stats before Start: SessionTimeout %v, want 0", s.SessionTimeout)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := range a.Updates() {
			u.Ack()
		}
	}()
	t.Cleanup(func() { a.Close(); <-done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.SessionTimeout != granted {
		t.Errorf("Stats: SessionTimeout %v, want the granted %v", s.SessionTimeout, granted)
	}
	var found []actortest.Record
	for range logs.Count() {
		if r := logs.Next(t, time.Second); strings.Contains(r.Msg, "granted another session timeout") {
			found = append(found, r)
		}
	}
	if len(found) != 1 || found[0].Attrs["requested"] != sessionTimeout.String() || found[0].Attrs["granted"] != granted.String() {
		t.Errorf("granted-timeout warnings %+v; want one with requested=%v granted=%v", found, sessionTimeout, granted)
	}
}
