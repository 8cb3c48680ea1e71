package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// Hand-offs: a graceful leave, and the fencing tokens that grow with
// every change of owner.

func TestGracefulLeaveHandsOver(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	want := actortest.PartsN("t", 12)
	var ms []*member
	for i := range 3 {
		cfg := c.config(fmt.Sprintf("m%d", i), map[string][]int32{"t": ids(12)})
		cfg.SessionTimeout = 10 * time.Second // a leave must not wait for it
		ms = append(ms, c.start(cfg))
	}
	c.waitConverged(want)

	c.stop(ms[1])
	start := time.Now()
	c.waitConverged(want)
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("hand-over after a graceful leave took %v, as long as a session timeout", took)
	}
	if u, _ := ms[1].snapshot(); u.Generation == 0 {
		t.Error("the leaver never received an update")
	}
	if err := ms[1].alloc.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if err := ms[1].alloc.AddPartitions(context.Background(), map[string][]int32{"t": {99}}); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("AddPartitions after Close = %v, want ErrClosed", err)
	}
}

// held is who owns a partition, with which token.
type held struct {
	owner string
	token int64
}

// ownership returns the owner and token of each partition the members'
// latest Updates assign, and fails the test if an assigned partition has
// no token.
func ownership(t *testing.T, ms ...*member) map[zkalloc.Partition]held {
	t.Helper()
	out := map[zkalloc.Partition]held{}
	for _, m := range ms {
		u, _ := m.snapshot()
		for _, p := range u.Assigned {
			tok, ok := u.Token(p)
			if !ok || tok <= 0 {
				t.Fatalf("%s: Token(%s) = %d, %v for an assigned partition", m.name, p, tok, ok)
			}
			out[p] = held{m.name, tok}
		}
		if _, ok := u.Token(zkalloc.Partition{Topic: "none", ID: 0}); ok {
			t.Errorf("%s: a token for a partition not assigned", m.name)
		}
	}
	return out
}

// compareTokens checks that every partition kept by its owner kept its
// token and every one that changed owner got a larger one, and that some
// moved.
func compareTokens(t *testing.T, stage string, prev, now map[zkalloc.Partition]held) {
	t.Helper()
	kept, moved := 0, 0
	for p, h := range now {
		was := prev[p]
		switch {
		case was.owner == h.owner && h.token != was.token:
			t.Errorf("%s: %s kept %s, but its token changed from %d to %d", stage, h.owner, p, was.token, h.token)
		case was.owner == h.owner:
			kept++
		case h.token <= was.token:
			t.Errorf("%s: %s took %s over from %s with token %d, not above %d", stage, h.owner, p, was.owner, h.token, was.token)
		default:
			moved++
		}
	}
	t.Logf("%s: %d partitions kept their tokens, %d moved with larger ones", stage, kept, moved)
	if moved == 0 {
		t.Errorf("%s: no partition changed owner", stage)
	}
}

// Fencing tokens, through the public API: a partition's token stays the
// same while its member keeps it, and grows when the partition changes
// owner, on a join and on a leave.
func TestTokensGrowOnChangeOfOwner(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(8)}
	want := actortest.PartsN("t", 8)
	a := c.start(c.config("a", seed))
	c.waitConverged(want)
	alone := ownership(t, a)
	if len(alone) != len(want) {
		t.Fatalf("a owns %d partitions alone, want %d", len(alone), len(want))
	}

	b := c.start(c.config("b", seed))
	c.waitConverged(want)
	both := ownership(t, a, b)
	compareTokens(t, "b joined", alone, both)

	c.stop(a)
	c.waitConverged(want)
	compareTokens(t, "a left", both, ownership(t, b))
}
