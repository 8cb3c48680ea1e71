package zktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// Ephemerals lists each ephemeral node with its owner, and forgets it once
// its session is gone.
func TestEphemerals(t *testing.T) {
	t.Parallel()
	s := zktest.Standalone(t, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, []string{s.Addr()}, 4*time.Second)
	for _, p := range []string{"/e1", "/e2"} {
		if _, err := c.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/persistent", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, err := zktest.Ephemerals(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	if len(got) != 2 || got["/e1"] != id || got["/e2"] != id {
		t.Errorf("Ephemerals = %v, want /e1 and /e2 owned by %#x", got, id)
	}
	c.Close()
	got, err = zktest.Ephemerals(ctx, s.Addr())
	if err != nil || len(got) != 0 {
		t.Errorf("Ephemerals after the session closed = %v, %v; want none", got, err)
	}
}
