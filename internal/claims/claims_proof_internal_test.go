package claims

import (
	"log/slog"
	"math"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// ownersStat is the Stat a server reports for a node under which creates
// children were ever created and children are left: the server keeps the
// count of creates and reports Cversion = 2 × creates − NumChildren, in
// int32 arithmetic (DataNode.copyStat).
func ownersStat(creates int64, children int32) *zk.Stat {
	return &zk.Stat{Czxid: 7, Cversion: int32(2*creates - int64(children)), NumChildren: children}
}

// ownersConn answers every Exists with a copy of stat; nothing else.
type ownersConn struct {
	zksession.Conn
	stat *zk.Stat
}

func (c ownersConn) Exists(string) (bool, *zk.Stat, error) {
	st := *c.stat
	return true, &st, nil
}

// testClaims returns an actor on a session cell of its own, logging to
// logger (none if nil), with what the allocator would set for the rest.
func testClaims(logger *slog.Logger) *Actor {
	return New(testConfig(Config{Session: actor.NewLatest[zksession.State](), Logger: logger}))
}

// testConfig returns cfg with the fields a test leaves out filled in:
// the group g under /zkalloc, member m, and as the allocator would fill
// them, world-all ACL, a Logger that discards, the real clock. The actor
// has no defaults of its own.
func testConfig(cfg Config) Config {
	if cfg.Paths.Group == "" {
		cfg.Paths = zkpath.Group{Root: "/zkalloc", Group: "g"}
	}
	if cfg.Member == "" {
		cfg.Member = "m"
	}
	if len(cfg.ACL) == 0 {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	return cfg
}

// Since ZooKeeper 3.6 the count of creates under the owners node stops at
// MaxInt32, and an outsider's delete of one of our claims then cancels
// out against another create in Cversion − NumChildren: the proof must
// be refused. (Before, it held: the release deleted, unread, a claim that
// was no longer this session's.)
func TestProofRefusedOnceTheCounterSaturates(t *testing.T) {
	c := testClaims(nil)

	// The arithmetic, below the bound: our own create changes nothing, an
	// outsider's delete breaks the proof.
	c.rebase(markOf(ownersStat(100, 10)))
	if !c.proves(markOf(ownersStat(101, 11))) {
		t.Error("a create (ours) broke the proof")
	}
	if c.proves(markOf(ownersStat(101, 10))) {
		t.Error("a create and a delete not ours proved nobody else deleted a claim")
	}

	// At the bound: from one before it, a create reaches it, an outsider
	// deletes a claim of ours and another member creates it again, which
	// the server no longer counts.
	base := markOf(ownersStat(math.MaxInt32-1, 1000))
	if base.saturated {
		t.Fatal("a count one below the bound read as saturated")
	}
	c.rebase(base)
	after := markOf(ownersStat(math.MaxInt32, 1001))
	if after.twice != base.twice {
		t.Fatalf("test arithmetic: twice %d, base %d; want them equal, as the server reports them", after.twice, base.twice)
	}
	if !after.saturated {
		t.Errorf("Cversion %d, NumChildren %d not read as saturated", ownersStat(math.MaxInt32, 1001).Cversion, int32(1001))
	}
	if c.proves(after) {
		t.Error("a saturated owners node proved that nobody else deleted a claim")
	}
	c.rebase(after)
	if c.baseOK {
		t.Error("a saturated owners node was taken as the base of a proof")
	}
	for _, n := range []int32{0, 1, 1 << 20, math.MaxInt32} {
		if !markOf(ownersStat(math.MaxInt32, n)).saturated {
			t.Errorf("%d children under a saturated node: not read as saturated", n)
		}
	}
}

// Once the counter has saturated, the periodic check cannot tell from
// Cversion that a claim changed: every look checks every claim held, and
// the condition is logged once. (Before, an unchanged Cversion spared the
// check, which so missed a claim deleted and created again.)
func TestChecksReadClaimsOnceTheCounterSaturates(t *testing.T) {
	logs := actortest.NewLogs()
	c := testClaims(slog.New(logs))
	c.ours[rebalance.Partition{Topic: "t", ID: 0}] = 1
	conn := ownersConn{stat: ownersStat(math.MaxInt32, 1000)}
	for look := range 3 {
		c.verify = false
		if _, _, err := c.lookAtOwners(conn); err != nil {
			t.Fatal(err)
		}
		if !c.verify {
			t.Errorf("look %d at a saturated owners node with its Cversion unchanged: the claims held are not checked", look)
		}
		if c.baseOK {
			t.Errorf("look %d: a saturated owners node taken as a base", look)
		}
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d warnings logged over three looks, want 1", n)
	}
}

// The proof's base is dropped on every new connection, even to the same
// session: it was read from the last connection's server, and the verify
// after the reconnection reads the claims and takes it again. (Before, it
// survived a move to another server.)
func TestProofBaseDroppedOnAFreshConnection(t *testing.T) {
	in := actor.NewLatest[zksession.State]()
	c := New(testConfig(Config{Session: in}))
	defer c.loop.Stop()
	defer c.checkTimer.Stop()
	up := func(reconnects uint64) {
		t.Helper()
		in.Set(zksession.State{State: session.State{Status: session.Up, SessionID: 1, Reconnects: reconnects}})
		fresh, ok := c.loop.Take()
		if !ok {
			t.Fatal("no session state taken")
		}
		c.onSession(fresh)
	}
	up(1)
	c.ours[rebalance.Partition{Topic: "t", ID: 0}] = 1
	c.rebase(markOf(ownersStat(10, 1)))
	up(2) // the same session, on a new connection
	if c.baseOK {
		t.Error("the proof's base survived a new connection")
	}
	if !c.verify {
		t.Error("the claims held are not verified after a new connection")
	}
}
