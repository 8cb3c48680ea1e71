package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Start: a restart under the same name, and what Start says when its
// context ends first.

// startCrashable starts cfg's member through a proxy of its own; crash
// cuts it off for good, as kill -9 would: its session is not closed, and
// the server expires it after its timeout. The cut member is set free
// when the test ends (it then finds its name taken and stops).
func startCrashable(t *testing.T, srv string, cfg zkalloc.Config) (m *seatMember, crash func()) {
	t.Helper()
	proxy := zktest.StartProxy(t, srv)
	cfg.Servers = proxy.Addrs()
	m = startSeatMember(t, cfg)
	t.Cleanup(func() { proxy.Blackhole(false) }) // before m is closed: Cleanups run last first
	return m, func() { proxy.Blackhole(true) }
}

// heldName counts the warnings that the member's name is held by
// another session.
func heldName(t *testing.T, logs *actortest.Logs) int {
	t.Helper()
	n := 0
	for range logs.Count() {
		if r := logs.Next(t, time.Second); strings.Contains(r.Msg, "member name held by another session") {
			n++
		}
	}
	return n
}

// A member killed and restarted at once under its name finds its node
// held by its crashed run's session: Start waits for the server to
// expire that session, and returns within its timeout and a margin.
func TestStartWaitsForACrashedRunsSession(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	cfg := c.config("a", map[string][]int32{"t": ids(4)})
	_, crash := startCrashable(t, srv.Addr(), cfg)
	crash()
	cut := time.Now()

	logs := actortest.NewLogs()
	cfg.Logger = slog.New(logs)
	m := startSeatMember(t, cfg) // fails the test if Start fails
	took := time.Since(cut)
	t.Logf("Start returned %v after the crash (session timeout %v)", took, sessionTimeout)
	if limit := sessionTimeout + 3*time.Second; took > limit {
		t.Errorf("Start returned %v after the crash, want within the old session's timeout %v and a margin", took, sessionTimeout)
	}
	waitFor(t, testTimeout, func() string {
		if got := m.latest().Assigned; len(got) != 4 {
			return fmt.Sprintf("the restarted member has %v, want all 4", got)
		}
		return ""
	})
	if n := heldName(t, logs); n != 1 {
		t.Errorf("%d warnings that the name is held, want 1", n)
	}
}

// With DepartureDelay, a member killed and restarted at once moves
// nothing: its seat is kept while its old session expires, nobody else's
// partitions change, and it takes exactly its own back, with no retry
// loop around Start.
func TestRestartUnderTheSameNameMovesNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	all := actortest.PartsN("t", 30)
	cfg := func(name string) zkalloc.Config {
		cfg := c.config(name, map[string][]int32{"t": ids(30)})
		cfg.DepartureDelay = 4 * sessionTimeout
		return cfg
	}
	a, b := startSeatMember(t, cfg("a")), startSeatMember(t, cfg("b"))
	old, crash := startCrashable(t, srv.Addr(), cfg("c"))
	waitFor(t, testTimeout, func() string { return settledOn([]*seatMember{a, b, old}, []string{"a", "b", "c"}, all) })
	before := map[string][]zkalloc.Partition{"a": a.latest().Assigned, "b": b.latest().Assigned, "c": old.latest().Assigned}
	fromA, fromB := a.received(), b.received()

	crash()
	cut := time.Now()
	m := startSeatMember(t, cfg("c"))
	t.Logf("c back %v after the crash", time.Since(cut))
	waitFor(t, testTimeout, func() string { return settledOn([]*seatMember{a, b, m}, []string{"a", "b", "c"}, all) })
	if away := time.Since(cut); away >= cfg("c").DepartureDelay {
		t.Fatalf("c was away %v, longer than the delay %v: the test proves nothing", away, cfg("c").DepartureDelay)
	}
	if got := m.latest().Assigned; !slices.Equal(got, before["c"]) {
		t.Errorf("c back with %v, want its own %v", got, before["c"])
	}
	unchanged(t, a, fromA, before["a"])
	unchanged(t, b, fromB, before["b"])
}

// A Start whose context ends while another live session holds the name
// fails with ErrDuplicateMember and ctx's error, naming the holder, which
// it logged once.
func TestStartGivesUpOnAHeldName(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	first := c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	holder, _ := zkalloc.Credentials(first.alloc)

	logs := actortest.NewLogs()
	cfg := c.config("a", nil)
	cfg.Logger = slog.New(logs)
	dup, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = dup.Start(ctx)
	t.Logf("Start: %v", err)
	if !errors.Is(err, zkalloc.ErrDuplicateMember) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start while the name is held = %v, want ErrDuplicateMember and DeadlineExceeded", err)
	}
	host, _ := os.Hostname()
	for _, want := range []string{fmt.Sprintf("%#x", holder), "host " + host, fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start's error %q does not say %q", err, want)
		}
	}
	if n := heldName(t, logs); n != 1 {
		t.Errorf("%d warnings that the name is held, want 1", n)
	}
	if s := first.alloc.Stats(); s.Assigned != 4 {
		t.Errorf("the holder has %d partitions assigned, want its 4", s.Assigned)
	}
}

// failing is a strategy that always fails in one way.
type failing struct {
	name    string
	assign  func() error
	started chan struct{} // closed at the first Assign, if not nil
}

func (f *failing) Name() string { return f.name }

func (f *failing) Assign([]string, []rebalance.Partition) (map[string][]rebalance.Partition, error) {
	if f.started != nil {
		select {
		case <-f.started:
		default:
			close(f.started)
		}
	}
	return nil, f.assign()
}

// When the strategy errs, panics or never returns, Start's error says so
// (and wraps the error), not just that its context ended.
func TestStartSaysWhyTheStrategyGaveNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // the blocked run returns: no goroutine is left
	tests := []struct {
		name     string
		strategy *failing
		want     []string
		wrapped  error
	}{
		{"errs", &failing{name: "erring", assign: func() error { return errors.New("no capacity today") }},
			[]string{"strategy failed: erring: no capacity today"}, rebalance.ErrStrategy},
		{"panics", &failing{name: "panicking", assign: func() error { panic("out of cheese") }},
			[]string{"panicking panicked: out of cheese"}, rebalance.ErrStrategy},
		{"blocks", &failing{name: "blocking", assign: func() error { <-release; return errors.New("released") }, started: make(chan struct{})},
			[]string{"strategy blocking has not returned after"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, []string{srv.Addr()})
			cfg := c.config("a", map[string][]int32{"t": ids(4)})
			cfg.Strategy = tt.strategy
			a, err := zkalloc.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err = a.Start(ctx)
			t.Logf("Start: %v", err)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Start = %v, want DeadlineExceeded", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Start = %q, want it to say %q", err, want)
				}
			}
			if tt.wrapped != nil && !errors.Is(err, tt.wrapped) {
				t.Errorf("Start = %v, want it to wrap %v", err, tt.wrapped)
			}
			if tt.strategy.started != nil {
				select {
				case <-tt.strategy.started:
				default:
					t.Error("the strategy never ran: the test proves nothing")
				}
			}
		})
	}
}

// TestStartReportsClaimsAsTheyAreMade: the first member of a group of
// many free partitions starts once its first few hundred claims are
// made, with the rest pending, instead of after every one of them (the
// first member of a group of 100,000 partitions took 4.4 s to start, all
// of it creating claims); the rest follow.
func TestStartReportsClaimsAsTheyAreMade(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	const n = 5_000
	m := c.start(c.config("a", map[string][]int32{"t": ids(n)}))
	first := m.alloc.Current()
	if len(first.Pending) == 0 || len(first.Assigned) == n {
		t.Errorf("Start returned with %d assigned and %d pending; want it to return before every claim was made", len(first.Assigned), len(first.Pending))
	}
	c.waitConverged(actortest.PartsN("t", n))
}
