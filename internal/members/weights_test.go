package members_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
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
