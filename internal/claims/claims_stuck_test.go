package claims_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// When claims get stuck is the member core's decision (see
// decision.Core); the claims actor names the holders in Held and, asked,
// looks them up and logs them.

// blockedBy is the condition "Held names exactly these holders".
func blockedBy(want map[rebalance.Partition]int64) (string, func(decision.Held) bool) {
	return "naming the holders", func(h decision.Held) bool {
		if len(h.Blocked) != len(want) {
			return false
		}
		for _, b := range h.Blocked {
			if s, ok := want[b.Partition]; !ok || s != b.Session {
				return false
			}
		}
		return true
	}
}

// TestClaimsReportClaimsHeldTooLong: Held names the session holding each
// wanted claim, until it is handed over; a report names the holder: an
// error when its member node shows another strategy, a warning when it is
// no member at all.
func TestClaimsReportClaimsHeldTooLong(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
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

	logs := actortest.NewLogs()
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, func(cfg *claims.Config) {
		cfg.Logger, cfg.Strategy = slog.New(logs), "balanced"
	})
	d := a.want(ts...)
	a.waitHeld(holds(d, ts[3:]))
	a.waitHeld(blockedBy(map[rebalance.Partition]int64{ts[0]: other.SessionID, ts[1]: other.SessionID, ts[2]: ghost.SessionID}))
	if err := other.Conn.Delete(claimPath(ts[1]), -1); err != nil { // handed over
		t.Fatal(err)
	}
	a.waitHeld(holds(d, []rebalance.Partition{ts[1], ts[3]}))
	if what, ok := blockedBy(map[rebalance.Partition]int64{ts[0]: other.SessionID, ts[2]: ghost.SessionID}); !ok(a.last) {
		t.Errorf("Held %+v, want it %s t:0 and t:2", a.last, what)
	}

	a.stuck.Put(
		decision.Stuck{Session: other.SessionID, Partitions: ts[:1], HeldFor: time.Minute},
		decision.Stuck{Session: ghost.SessionID, Partitions: ts[2:3], HeldFor: time.Minute})
	byHolder := map[string]actortest.Record{}
	for range 2 {
		r := logs.Next(t, claimWait)
		byHolder[r.Attrs["holder"]] = r
	}
	if r := byHolder["other"]; r.Level != slog.LevelError || r.Attrs["claims"] != "1" || r.Attrs["first"] != "t:0" ||
		r.Attrs["holder_strategy"] != "range" || r.Attrs["strategy"] != "balanced" || r.Attrs["held_for"] != "1m0s" {
		t.Errorf("report on other's claims: %+v", r)
	}
	if r := byHolder["ghost"]; r.Level != slog.LevelWarn || r.Attrs["claims"] != "1" || r.Attrs["first"] != "t:2" ||
		!strings.HasPrefix(r.Attrs["holder_member"], "none") {
		t.Errorf("report on ghost's claims: %+v", r)
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
	logs := actortest.NewLogs()
	a := startClaimerWith(t, servers, "a", 4*time.Second, nil, func(cfg *claims.Config) { cfg.Logger = slog.New(logs) })
	a.waitHeld(holds(a.want(t0...), nil))
	a.stuck.Put(decision.Stuck{Session: ghost.SessionID, Partitions: t0, HeldFor: time.Minute})
	r := logs.Next(t, claimWait)
	holder := r.Attrs["holder"]
	if !strings.HasPrefix(holder, "not a member name") || len(holder) > 120 {
		t.Errorf("holder %q, want it reported as not a member name, cut short", holder)
	}
	if _, ok := r.Attrs["holder_member"]; ok {
		t.Errorf("report %+v read a member node named by foreign data", r)
	}
}
