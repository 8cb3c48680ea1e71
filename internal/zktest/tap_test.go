package zktest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// A tapped proxy sees each request a client sends, with its path: the
// way to count a client's requests without a hook in it.
func TestTappedProxySeesRequests(t *testing.T) {
	t.Parallel()
	s := zktest.Standalone(t, zktest.Options{})
	var mu sync.Mutex
	var seen []zktest.Request
	p := zktest.StartTappedProxy(t, func(r zktest.Request) {
		if r.Op == "ping" {
			return // at the client's pace: not part of what is asked below
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}, s.Addr())
	c := connect(t, p.Addrs(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/tap", []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/tap"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenW("/tap"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/tap", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(&zk.CreateRequest{Path: "/tap/a", Acl: acl}, &zk.DeleteRequest{Path: "/tap/a", Version: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync("/tap"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Exists("/tap"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/tap", -1); err != nil {
		t.Fatal(err)
	}
	want := []zktest.Request{
		{Op: "create", Path: "/tap"},
		{Op: "getData", Path: "/tap"},
		{Op: "getChildren2", Path: "/tap"},
		{Op: "setData", Path: "/tap"},
		{Op: "multi", Path: "/tap/a"},
		{Op: "sync", Path: "/tap"},
		{Op: "exists", Path: "/tap"},
		{Op: "delete", Path: "/tap"},
	}
	// Each call returns once its reply came, so the tap has seen it.
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("tap saw %v, want %v", seen, want)
	}
}
