package claims_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The claims actor times the wanted claims other sessions hold, on its
// clock, and warns of those held past the bound (stuck.go's tests check
// the timing); these tests run it against ZooKeeper with a fake clock.

// stuckConfig configures a claimer for the stuck tests: its clock, its
// log, Settle and ReleaseTimeout as in stuck.go's tests, and no
// periodic check, so that the stuck timer is the only timer of the clock
// while no attempt fails.
func stuckConfig(clock *actor.FakeClock, logs *actortest.Logs) func(*claims.Config) {
	return func(cfg *claims.Config) {
		cfg.Clock, cfg.Logger, cfg.Strategy = clock, slog.New(logs), "balanced"
		cfg.Settle, cfg.ReleaseTimeout = time.Second, 5*time.Second
		cfg.CheckEvery = -1
	}
}

// stuckBound is the bound of stuckConfig with the granted session
// timeout: 5 × Settle + 3 × ReleaseTimeout + granted + 10 s.
func stuckBound(granted time.Duration) time.Duration {
	return 5*time.Second + 3*5*time.Second + granted + 10*time.Second
}

// waitTimers waits until n timers of clock are armed.
func waitTimers(t *testing.T, clock *actor.FakeClock, n int, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), claimWait)
	defer cancel()
	if err := clock.WaitTimers(ctx, n); err != nil {
		t.Fatalf("%s never armed", what)
	}
}

// TestClaimsReportClaimsHeldTooLong: wanted claims that other sessions
// hold past the bound, counted with the session timeout the server
// granted (not the one asked for), are warned of once per holding
// session, naming the holder: an error when its member node shows
// another strategy, a warning when it is no member at all. A claim
// handed over in time is not warned of.
func TestClaimsReportClaimsHeldTooLong(t *testing.T) {
	t.Parallel()
	const granted, asked = 4 * time.Second, 20 * time.Second
	srv := zktest.Standalone(t, zktest.Options{MaxSessionTimeout: granted})
	servers := []string{srv.Addr()}
	other, ghost := actortest.Observe(t, servers, claimWait), actortest.Observe(t, servers, claimWait)
	for _, p := range []string{claimPaths.Members(), claimPaths.Owners()} {
		if err := zkpath.Ensure(other.Conn, p); err != nil {
			t.Fatal(err)
		}
	}
	create := func(conn zksession.Conn, path, data string) {
		t.Helper()
		if _, err := conn.Create(path, []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	ts := actortest.Parts("t", 0, 1, 2, 3)
	create(other.Conn, claimPaths.Member("other"), `{"strategy":"range","version":"zkalloc/1"}`)
	create(other.Conn, claimPath(ts[0]), "other")
	create(other.Conn, claimPath(ts[1]), "other")
	create(ghost.Conn, claimPath(ts[2]), "ghost") // no member node

	clock := actor.NewFakeClock(time.Now())
	logs := actortest.NewLogs()
	a := startClaimerWith(t, servers, "a", asked, nil, stuckConfig(clock, logs))
	if a.st.Timeout != granted {
		t.Fatalf("session timeout %v granted, want %v", a.st.Timeout, granted)
	}
	d := a.want(ts...)
	a.waitHeld(holds(d, ts[3:]))
	waitTimers(t, clock, 1, "the stuck timer") // the holders are timed
	// t:1 is handed over in time.
	if err := other.Conn.Delete(claimPath(ts[1]), -1); err != nil {
		t.Fatal(err)
	}
	a.waitHeld(holds(d, []rebalance.Partition{ts[1], ts[3]}))

	after := stuckBound(granted)
	clock.Advance(after - time.Second)
	if n := clock.Timers(); n != 1 {
		t.Fatalf("%d timers armed a second before the bound, want the stuck timer, not yet fired", n)
	}
	clock.Advance(time.Second)
	byHolder := map[string]actortest.Record{}
	for range 2 {
		r := logs.Next(t, claimWait)
		byHolder[r.Attrs["holder"]] = r
	}
	if r := byHolder["other"]; r.Level != slog.LevelError || r.Attrs["count"] != "1" || r.Attrs["partitions"] != "t:0" ||
		r.Attrs["holder_strategy"] != "range" || r.Attrs["strategy"] != "balanced" || r.Attrs["held_for"] != after.String() ||
		r.Attrs["holder_session"] != fmt.Sprintf("%#x", other.SessionID) || !strings.Contains(r.Msg, "held by a member that runs another strategy") {
		t.Errorf("warning of other's claims: %+v", r)
	}
	if r := byHolder["ghost"]; r.Level != slog.LevelWarn || r.Attrs["count"] != "1" || r.Attrs["partitions"] != "t:2" ||
		!strings.HasPrefix(r.Attrs["holder_member"], "none") || r.Attrs["held_for"] != after.String() || !strings.Contains(r.Msg, "restart the holder") {
		t.Errorf("warning of ghost's claims: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), claimWait)
	defer cancel()
	if err := clock.WaitNoTimers(ctx); err != nil {
		t.Fatalf("%d timers still armed after every holder was warned of", clock.Timers())
	}
	clock.Advance(time.Hour)
	if n := logs.Count(); n != 2 {
		t.Errorf("%d warnings, want 2: each holder is warned of once", n)
	}
}

// A claim whose data is no member name (a foreign process wrote it) is
// reported as such: no member node is read from it, and no more than its
// start is logged.
func TestClaimsStuckHolderWithForeignData(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	ghost := actortest.Observe(t, servers, claimWait)
	if err := zkpath.Ensure(ghost.Conn, claimPaths.Owners()); err != nil {
		t.Fatal(err)
	}
	t0 := actortest.Parts("t", 0)
	data := "../members/x/" + strings.Repeat("y", 1000)
	if _, err := ghost.Conn.Create(claimPath(t0[0]), []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	clock := actor.NewFakeClock(time.Now())
	logs := actortest.NewLogs()
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, stuckConfig(clock, logs))
	a.waitHeld(holds(a.want(t0...), nil))
	waitTimers(t, clock, 1, "the stuck timer")
	clock.Advance(stuckBound(a.st.Timeout))
	r := logs.Next(t, claimWait)
	holder := r.Attrs["holder"]
	if !strings.HasPrefix(holder, "not a member name") || len(holder) > 120 {
		t.Errorf("holder %q, want it reported as not a member name, cut short", holder)
	}
	if _, ok := r.Attrs["holder_member"]; ok {
		t.Errorf("report %+v read a member node named by foreign data", r)
	}
}
