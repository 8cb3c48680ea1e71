package claims_test

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// manyParts returns n partitions of topic t, more than a release proves
// without reads (provenReleaseAbove).
func manyParts(n int) []rebalance.Partition {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	return actortest.Parts("t", ids...)
}

// startHolding starts a server and the claimer "a", without the periodic
// check, and waits until a holds want.
func startHolding(t *testing.T, want []rebalance.Partition) (servers []string, a *claimer) {
	t.Helper()
	srv := zktest.Standalone(t, zktest.Options{})
	servers = []string{srv.Addr()}
	a = startClaimerWith(t, servers, "a", 4*time.Second, nil, noCheck)
	a.waitHeld(holds(a.want(want...), want))
	return servers, a
}

// A release of many claims that nobody else touched deletes them without
// reading them: the owners node's Stat proves them ours (claims_proof.go).
// (Before, each claim was read first: 2,500 reads here, 50,000 in a
// hand-off of half a group of 100,000 partitions.)
func TestClaimsProvenReleaseReadsNoClaim(t *testing.T) {
	t.Parallel()
	want := manyParts(2500)
	servers, a := startHolding(t, want)

	before := a.requests.Load()
	a.waitHeld(holds(a.want(), nil))
	// 25 batches of deletes, a read of the owners node per releaseGate (8)
	// of them.
	if n, most := a.requests.Load()-before, int64(25+4); n > most {
		t.Errorf("releasing %d claims took %d requests, want at most %d (a batch of deletes for each hundred, a read of the owners node for each 8 batches)", len(want), n, most)
	}
	obs := actortest.Observe(t, servers, claimWait)
	if kids, _, err := obs.Conn.Children(claimPaths.Owners()); err != nil || len(kids) != 0 {
		t.Errorf("owners has %d children (%v) after the release, want none", len(kids), err)
	}
}

// A claim deleted from outside and created again by another session
// defeats the proof: the release then reads the claims, and leaves the
// other's node. (A release deleting the claims it believes held without
// the proof would delete the other's node.)
func TestClaimsProvenReleaseLeavesAnotherSessionsNode(t *testing.T) {
	t.Parallel()
	want := manyParts(2500)
	servers, a := startHolding(t, want)

	obs := actortest.Observe(t, servers, claimWait)
	stolen := want[1234]
	if err := obs.Conn.Delete(claimPath(stolen), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Conn.Create(claimPath(stolen), []byte("other"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	before := a.requests.Load()
	a.waitHeld(holds(a.want(), nil))
	if n := a.requests.Load() - before; n < int64(len(want)) {
		t.Errorf("releasing %d claims, one of them another session's, took %d requests; want a read of each", len(want), n)
	}
	checkClaim(t, obs.Conn, stolen, obs.SessionID, "other")
	if kids, _, err := obs.Conn.Children(claimPaths.Owners()); err != nil || len(kids) != 1 {
		t.Errorf("owners has %d children (%v) after the release, want only the other's", len(kids), err)
	}
}

// The periodic check of the claims held reads only the owners node while
// nobody else deleted a claim, though this member's own creates changed
// it. (Before, the first check after claiming read every claim held.) A
// claim deleted from outside is still noticed, and reported vanished.
func TestClaimsCheckProvenReadsNoClaim(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, claimWait)
	a, check := startChecked(t, []string{srv.Addr()})
	ts := manyParts(2500)
	d := a.want(ts...)
	first := a.waitHeld(holds(d, ts))

	if _, n := check(); n != 1 {
		t.Errorf("the first check after claiming %d partitions sent %d requests, want 1: the owners node", len(ts), n)
	}
	lost := ts[77]
	if err := obs.Conn.Delete(claimPath(lost), -1); err != nil {
		t.Fatal(err)
	}
	h, n := check()
	if want := 1 + int64(len(ts)) + 1; n != want {
		t.Errorf("the check after a deletion sent %d requests, want %d: the owners node, each claim, the hold record of the one gone", n, want)
	}
	if !slices.Equal(h.Vanished, []rebalance.Partition{lost}) || len(h.Partitions) != len(ts)-1 || tokenOf(h, ts[0]) != tokenOf(first, ts[0]) {
		t.Errorf("%s not reported vanished, the others held, after it was deleted", lost)
	}
	if _, n := check(); n != 1 {
		t.Errorf("the check after the claims were read sent %d requests, want 1", n)
	}
}

// A member taking over many claims whose holder released a batch before
// the member looked at the claim the batch failed on creates the rest of
// the batch in one multi-operation, rather than looking at each claim:
// with releases proven without reads, a holder often releases before
// the member looks. (Before, 1,485 looks here, and up to 30,000 requests
// in a hand-off of 50,000 claims.)
func TestClaimsReleasedBeforeTheLookClaimedInBatches(t *testing.T) {
	t.Parallel()
	want := manyParts(1500)
	servers, a := startHolding(t, want)

	open := make(chan struct{})
	var looking atomic.Int64
	b := startClaimerWith(t, servers, "b", 4*time.Second, func(conn zksession.Conn) zksession.Conn {
		return holdBlockingConn{Conn: conn, open: open, entered: &looking}
	}, noCheck)
	var once sync.Once
	unblock := func() { once.Do(func() { close(open) }) }
	t.Cleanup(unblock)
	db := b.want(want...)
	// Every batch fails, and the look at the claim each failed on begins
	// with its hold record, which waits here until a has released.
	const batches = 15
	for deadline := time.Now().Add(claimWait); looking.Load() < batches; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d looks began within %v, want %d", looking.Load(), claimWait, batches)
		}
	}
	a.waitHeld(holds(a.want(), nil))
	before := b.requests.Load()
	unblock()
	b.waitHeld(holds(db, want))
	// Each look's read of the claim, then a batch of creates each.
	if n, most := b.requests.Load()-before, int64(2*batches+5); n > most {
		t.Errorf("taking over %d claims released before the looks took %d requests, want at most %d", len(want), n, most)
	}
}

// holdBlockingConn holds every read of a hold record with a watch, which
// begins a look, until open is closed, and counts them in entered.
type holdBlockingConn struct {
	zksession.Conn
	open    <-chan struct{}
	entered *atomic.Int64
}

func (c holdBlockingConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if strings.HasPrefix(p, claimPaths.Holds()+"/") {
		c.entered.Add(1)
		<-c.open
	}
	return c.Conn.GetW(p)
}
