package zkalloc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// received is an Update a consumer received, and when.
type received struct {
	at time.Time
	u  zkalloc.Update
}

// recorder is a member whose consumer keeps every Update it receives, and
// acks each at once.
type recorder struct {
	alloc *zkalloc.Allocator
	done  chan struct{}
	mu    sync.Mutex
	log   []received
}

func startRecorder(t *testing.T, cfg zkalloc.Config) *recorder {
	t.Helper()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{alloc: alloc, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for u := range alloc.Updates() {
			r.mu.Lock()
			r.log = append(r.log, received{time.Now(), u})
			r.mu.Unlock()
			u.Ack()
		}
	}()
	t.Cleanup(func() { alloc.Close(); <-r.done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.Member, err)
	}
	return r
}

// since returns the Updates received at or after from.
func (r *recorder) since(from time.Time) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.log, func(e received) bool { return !e.at.Before(from) })
	if i < 0 {
		return nil
	}
	return slices.Clone(r.log[i:])
}

// A claim deleted by an outsider (an operator, a script) is noticed by its
// owner within about a session timeout: the owner revokes the partition at
// once, in a new Update, since it no longer holds the claim; its hold
// record keeps every other member from taking it meanwhile. Once the
// consumer has acked, the owner releases the record and claims the
// partition again, with a larger token: all well within three session
// timeouts plus 5 s. (Before, the owner created the claim again without
// a revoke, and in a hand-off the next owner could take it first: issue
// 24.)
func TestDeletedClaimIsRevokedThenRestored(t *testing.T) {
	t.Parallel()
	srv := server(t)
	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	c := newCluster(t, []string{srv.Addr()})
	seed := map[string][]int32{"t": ids(4)}
	want := actortest.PartsN("t", 4)
	a := startRecorder(t, c.config("a", seed))
	waitFor(t, testTimeout, func() string {
		if u := a.alloc.Current(); !slices.Equal(u.Assigned, want) || len(u.Pending) > 0 {
			return fmt.Sprintf("a assigned %v, pending %v", u.Assigned, u.Pending)
		}
		return ""
	})
	p := want[1]
	old, _ := a.alloc.Current().Token(p)
	path := fmt.Sprintf("%s/groups/%s/owners/%s", zkalloc.DefaultRoot, c.group, p)
	if _, stat, err := obs.Get(path); err != nil || stat.Czxid != old {
		t.Fatalf("claim %s: %v, %+v; want it with czxid %d, the token", path, err, stat, old)
	}

	if err := obs.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	bound := 3*sessionTimeout + 5*time.Second
	var revoked, back time.Time
	var tok int64
	waitFor(t, bound, func() string {
		revoked, back = time.Time{}, time.Time{}
		for _, e := range a.since(deleted) {
			switch {
			case revoked.IsZero() && slices.Contains(e.u.Revoked, p):
				revoked = e.at
			case !revoked.IsZero() && slices.Contains(e.u.Added, p):
				back = e.at
				tok, _ = e.u.Token(p)
			}
		}
		switch {
		case revoked.IsZero():
			return fmt.Sprintf("%s not revoked", p)
		case back.IsZero():
			return fmt.Sprintf("%s revoked, not added again", p)
		case tok <= old:
			return fmt.Sprintf("%s added again with token %d, not above %d", p, tok, old)
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
	t.Logf("%s revoked %v after the deletion, added again with a larger token %v after it (session timeout %v)",
		p, revoked.Sub(deleted).Round(time.Millisecond), back.Sub(deleted).Round(time.Millisecond), sessionTimeout)
	if u := a.alloc.Current(); !slices.Equal(u.Assigned, want) {
		t.Errorf("a's Assigned %v, want every partition again", u.Assigned)
	}
}
