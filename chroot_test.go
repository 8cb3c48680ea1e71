package zkalloc_test

import (
	"testing"

	"github.com/zkalloc/zkalloc/internal/actortest"
)

// TestChrootServerString runs two members of one group under a chroot, one
// given it per server, the other in a connect string, and looks from
// outside that every node of the group is under the chroot.
func TestChrootServerString(t *testing.T) {
	t.Parallel()
	srv := server(t)
	const chroot = "/kafka/team"
	c := newCluster(t, []string{srv.Addr() + chroot})
	c.start(c.config("a", map[string][]int32{"t": ids(4)}))
	second := c.config("b", nil)
	second.Servers = []string{srv.Addr() + "," + srv.Addr() + chroot}
	c.start(second)
	c.waitConverged(actortest.PartsN("t", 4))

	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	dir := chroot + "/zkalloc/groups/" + c.group
	for _, p := range []string{dir + "/members/a", dir + "/members/b", dir + "/partitions/t", dir + "/owners/t:0", dir + "/owners/t:3"} {
		if ok, _, err := obs.Exists(p); err != nil || !ok {
			t.Errorf("Exists(%s) = %v, %v; want the node under the chroot", p, ok, err)
		}
	}
	if ok, _, err := obs.Exists("/zkalloc/groups/" + c.group); err != nil || ok {
		t.Errorf("Exists(/zkalloc/groups/%s) = %v, %v; want nothing outside the chroot", c.group, ok, err)
	}
}
