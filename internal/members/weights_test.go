package members_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// weighing is the condition "the view lists exactly names, with weights
// (nil: all 1, and View.Weights nil)".
func weighing(names []string, weights []int) (string, func(membership.View) bool) {
	return "of " + fmt.Sprint(names) + " weighing " + fmt.Sprint(weights), func(v membership.View) bool {
		return slices.Equal(v.Members, names) && slices.Equal(v.Weights, weights) && (weights != nil || v.Weights == nil)
	}
}

// TestMembershipWeights: a member's view carries the weights the member
// nodes give (Info.Weight), in name order, its own from its config; a
// node whose data is not an Info weighs 1, one past MaxWeight is cut to
// it; a group whose weights are all 1 has views without Weights.
func TestMembershipWeights(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	b := startMember(t, servers, "b", membership.Info{Host: "hb"}, 4*time.Second)
	b.waitView(weighing([]string{"b"}, nil))

	a := startMember(t, servers, "a", membership.Info{Host: "ha", Weight: 3}, 4*time.Second)
	b.waitView(weighing([]string{"a", "b"}, []int{3, 1}))
	a.waitView(weighing([]string{"a", "b"}, []int{3, 1}))

	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Create(paths.Member("c"), []byte("not an Info"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Member("d"), membership.Info{Weight: 2 * rebalance.MaxWeight}.Data(), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	b.waitView(weighing([]string{"a", "b", "c", "d"}, []int{3, 1, 1, rebalance.MaxWeight}))

	a.run.Stop()
	for _, name := range []string{"c", "d"} {
		if err := obs.Delete(paths.Member(name), -1); err != nil {
			t.Fatal(err)
		}
	}
	b.waitView(weighing([]string{"b"}, nil))
}

// holdingList, once armed, holds the actor's next listing of the members
// until release is closed, after reporting on held.
type holdingList struct {
	zksession.Conn
	armed   *atomic.Bool
	held    chan<- struct{} // one slot
	release <-chan struct{}
}

func (c holdingList) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if path == paths.Members() && c.armed.CompareAndSwap(true, false) {
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.ChildrenW(path)
}

// TestMembershipWeightOfANameBackUnseen: b's node goes and comes back
// with another weight while c joins, all between two listings. The
// second listing holds a new name, c, but b is not new: before the fix
// the actor kept b's verdict, and its old weight, for as long as b's node
// lived. Now the members node's Cversion, grown by three changes where
// one name came, says that b may have gone and come back: it is read
// again.
func TestMembershipWeightOfANameBackUnseen(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	held, release := make(chan struct{}, 1), make(chan struct{})
	armed := new(atomic.Bool)
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, func(c zksession.Conn) zksession.Conn {
		return holdingList{Conn: c, armed: armed, held: held, release: release}
	}, nil)
	m.waitView(listing("m"))
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Create(paths.Member("b"), membership.Info{}.Data(), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	m.waitView(weighing([]string{"b", "m"}, nil))

	armed.Store(true)
	if _, err := obs.Create(paths.Member("c"), nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(wait):
		t.Fatal("the actor did not list the members")
	}
	if err := obs.Delete(paths.Member("b"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Member("b"), membership.Info{Weight: 2}.Data(), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	close(release)
	m.waitView(weighing([]string{"b", "c", "m"}, []int{2, 1, 1}))
}
