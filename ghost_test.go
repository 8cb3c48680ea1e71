package zkalloc_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
)

// TestGhostMemberGetsNothing puts a persistent node under members/, as an
// operator or another program might: it is no member. A one-member group
// owns every partition, and the ghost is logged once, with its path, as
// members come and go.
func TestGhostMemberGetsNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	members := "/zkalloc/groups/" + c.group + "/members"
	if err := zkpath.Ensure(obs, members); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(members+"/ghost", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	logs := actortest.NewLogs()
	cfg := c.config("a", map[string][]int32{"t": ids(4)})
	cfg.Logger = slog.New(logs)
	c.start(cfg)
	want := actortest.PartsN("t", 4)
	c.waitConverged(want)

	b := c.start(c.config("b", nil)) // the list changes twice more
	c.waitConverged(want)
	c.stop(b)
	c.waitConverged(want)

	ghosts := 0
	for range logs.Count() {
		r := logs.Next(t, testTimeout)
		if strings.Contains(r.Msg, "not a member") && r.Attrs["path"] == members+"/ghost" {
			ghosts++
		}
	}
	if ghosts != 1 {
		t.Errorf("the ghost was logged %d times; want once", ghosts)
	}
}
