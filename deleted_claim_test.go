package zkalloc_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// A claim deleted by an outsider (an operator, a script) is noticed and
// created again by its owner, well within three session timeouts plus
// 5 s; the partition stays assigned, with the new claim's larger token.
// Another member's claims are not touched. (Before, the claim stayed
// deleted until the owner's next reconnection.)
func TestDeletedClaimIsRestored(t *testing.T) {
	t.Parallel()
	srv := server(t)
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(4)}
	want := actortest.PartsN("t", 4)
	a := c.start(c.config("a", seed))
	c.waitConverged(want)
	u, _ := a.snapshot()
	p := want[1]
	old, _ := u.Token(p)
	path := fmt.Sprintf("%s/groups/%s/owners/%s", zkalloc.DefaultRoot, c.group, p)
	if _, stat, err := obs.Get(path); err != nil || stat.Czxid != old {
		t.Fatalf("claim %s: %v, %+v; want it with czxid %d, the token", path, err, stat, old)
	}

	if err := obs.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	bound := 3*sessionTimeout + 5*time.Second
	waitFor(t, bound, func() string {
		u, _ := a.snapshot()
		tok, ok := u.Token(p)
		if !ok || tok <= old {
			return fmt.Sprintf("token of %s %d, %v; want above %d", p, tok, ok, old)
		}
		data, stat, err := obs.Get(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return "claim not back"
		case err != nil:
			return err.Error()
		case string(data) != "a" || stat.Czxid != tok:
			return fmt.Sprintf("claim %q with czxid %d, want a's with %d", data, stat.Czxid, tok)
		}
		return ""
	})
	t.Logf("claim back and token published %v after the deletion (session timeout %v)", time.Since(deleted).Round(time.Millisecond), sessionTimeout)
	if u, _ := a.snapshot(); len(u.Assigned) != len(want) {
		t.Errorf("a's Assigned %v, want every partition still", u.Assigned)
	}
}
