package zkpath_test

import (
	"errors"
	"testing"
	"time"
	"unicode"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestValidateRoot(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"/zkalloc", "/a/b/c", "/zookeeperish", "/x/zookeeper"} {
		if err := zkpath.ValidateRoot(ok); err != nil {
			t.Errorf("ValidateRoot(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/", "zkalloc", "/zkalloc/", "/a//b", "/a/./b", "/a/../b", "/a\x00", "/zookeeper", "/zookeeper/x"} {
		if err := zkpath.ValidateRoot(bad); !errors.Is(err, zkpath.ErrInvalid) {
			t.Errorf("ValidateRoot(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestValidateNameAgreesWithZooKeeper creates a node for every name that
// ValidateName accepts, over a sample of the whole of Unicode: a name it
// lets through must never be one the server refuses.
func TestValidateNameAgreesWithZooKeeper(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	conn := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	parent := "/names"
	if _, err := conn.Create(parent, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for r := rune(1); r <= unicode.MaxRune; r += 13 {
		names = append(names, "n"+string(r))
		if r > 0xFFFF {
			r += 4096 // beyond the BMP, where every character is refused, a thinner sample
		}
	}
	names = append(names, "ünï", "a:b", "with space", "\u4e2d\u6587", "\uffef", "\U00010000", "\U0001F600", "\U0010FFFD")
	accepted := 0
	for _, name := range names {
		if rebalance.ValidateName(name) != nil {
			continue
		}
		accepted++
		if _, err := conn.Create(parent+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Errorf("ValidateName accepts %q (%U), but ZooKeeper refuses it: %v", name, []rune(name)[len([]rune(name))-1], err)
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of %d sampled names accepted; the sample tests too little", accepted, len(names))
	}
}
