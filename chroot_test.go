package zkalloc_test

import (
	"github.com/zkalloc/zkalloc/internal/actortest"

	"io"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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

	obs := observer(t, srv.Addr())
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

// observer connects a plain client to the server, closed when the test
// ends once its goroutines have stopped.
func observer(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		timeout := time.After(testTimeout)
		for {
			select {
			case _, ok := <-events:
				if !ok {
					return
				}
			case <-timeout:
				t.Errorf("observer's client did not stop within %v", testTimeout)
				return
			}
		}
	})
	return conn
}
