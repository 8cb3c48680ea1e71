package claims_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// nextLog returns the next record of logs whose message holds msg,
// skipping the others.
func nextLog(t *testing.T, logs *actortest.Logs, msg string) actortest.Record {
	t.Helper()
	deadline := time.Now().Add(claimWait)
	for {
		r := logs.Next(t, time.Until(deadline))
		if strings.Contains(r.Msg, msg) {
			return r
		}
	}
}

// The logs that name another session's claim name its member too, as
// holder, beside its session, as holder_session (they said
// owner=0x...): the warning of a claim taken by another member, and, at
// debug level, the waits for another's claim, with a hold record or
// without (a member of an older version).
func TestClaimsLogHolderByName(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	logs := actortest.NewLogsFrom(slog.LevelDebug)
	a := startClaimerWith(t, []string{srv.Addr()}, "a", 4*time.Second, nil, func(cfg *claims.Config) {
		cfg.Logger, cfg.CheckEvery = slog.New(logs), 100*time.Millisecond // the check finds t:0 taken
	})
	ts := actortest.Parts("t", 0, 1)
	t0, t1, t2 := ts[0], ts[1], actortest.Parts("t", 2)[0]
	d := a.want(ts...)
	a.waitHeld(holds(d, ts))

	// "other" takes t:0 from a, claim and hold record (an operator
	// deleted a's), and t:2 with a claim alone, as an older version does.
	other := fmt.Sprintf("%#x", obs.SessionID)
	acl := zk.WorldACL(zk.PermAll)
	if err := zkpath.Ensure(obs.Conn, claimPaths.Members()); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Conn.Multi(
		&zk.CreateRequest{Path: claimPaths.Member("other"), Data: []byte("{}"), Acl: acl, Flags: zk.FlagEphemeral},
		&zk.DeleteRequest{Path: claimPath(t0), Version: -1},
		&zk.DeleteRequest{Path: holdPath(t0), Version: -1},
		&zk.CreateRequest{Path: claimPath(t0), Data: []byte("other"), Acl: acl, Flags: zk.FlagEphemeral},
		&zk.CreateRequest{Path: holdPath(t0), Data: []byte(other + " other"), Acl: acl},
		&zk.CreateRequest{Path: claimPath(t2), Data: []byte("other"), Acl: acl, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	a.waitHeld("without t:0", func(h decision.Held) bool { return h.Seq == d.Seq && len(h.Partitions) == 1 && h.Partitions[0] == t1 })
	r := nextLog(t, logs, "now another's")
	if r.Level != slog.LevelWarn || r.Attrs["partition"] != "t:0" || r.Attrs["holder"] != "other" || r.Attrs["holder_session"] != other {
		t.Errorf("warning of t:0 taken: %+v, want holder=other holder_session=%s", r, other)
	}

	d = a.want(t0, t1, t2)
	a.waitHeld(holds(d, []rebalance.Partition{t1}))
	// A wait for each, in either order, through its hold record or its
	// claim.
	waiting := map[string]bool{"t:0": true, "t:2": true}
	deadline := time.Now().Add(claimWait)
	for len(waiting) > 0 {
		r := logs.Next(t, time.Until(deadline))
		if !strings.HasPrefix(r.Msg, "zkalloc: waiting for ") {
			continue
		}
		delete(waiting, r.Attrs["partition"])
		if r.Attrs["holder"] != "other" || r.Attrs["holder_session"] != other {
			t.Errorf("%+v, want holder=other holder_session=%s", r, other)
		}
	}
}
