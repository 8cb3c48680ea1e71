package zksession_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/session"
)

// TestSessionAuthOnEveryConnection gives digest credentials and checks
// that they are in place before the first request handed out, after a
// connection is reset (same session) and after the session expires (new
// session): each time, a node whose ACL grants only that identity can be
// written.
func TestSessionAuthOnEveryConnection(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	proxy := zktest.StartProxy(t, srv.Addr())
	cfg := zksession.Config{Servers: proxy.Addrs(), Timeout: 4 * time.Second,
		Auth: []zksession.Auth{{Scheme: "digest", Credentials: []byte("alice:secret")}}}
	s, w, _ := runConfig(t, cfg)
	up := w.waitFor("up", 10*time.Second, actortest.IsUp)
	// The "auth" scheme fails with InvalidACL on a connection without
	// credentials: this create proves them in place at once.
	if _, err := up.Conn.Create("/only-alice", []byte("0"), 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("create with an auth ACL on the first request: %v", err)
	}
	write := func(st zksession.State, when string) {
		t.Helper()
		if _, err := st.Conn.Set("/only-alice", []byte(when), -1); err != nil {
			t.Errorf("%s: Set on alice's node = %v; want the credentials given again", when, err)
		}
	}

	proxy.Reset()
	again := w.waitFor("up again", 10*time.Second, func(st zksession.State) bool { return actortest.IsUp(st) && st.Reconnects >= 2 })
	write(again, "after a reset")

	id, passwd := s.Credentials()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := zktest.ExpireSession(ctx, srv.Addr(), id, passwd); err != nil {
		t.Fatal(err)
	}
	renewed := w.waitFor("up with a new session", 10*time.Second, func(st zksession.State) bool {
		return actortest.IsUp(st) && st.SessionID != up.SessionID
	})
	write(renewed, "in a new session")

	outsider := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	if _, err := outsider.Set("/only-alice", []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("Set without credentials = %v; want NoAuth", err)
	}
}

// TestSessionAuthRefused: credentials of a scheme the server does not
// know end Run with an error naming AuthFailed, before any state with a
// client is published.
func TestSessionAuthRefused(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	s := zksession.New(actortest.SessionConfig(zksession.Config{Servers: []string{srv.Addr()}, Timeout: 4 * time.Second, Logger: slog.New(slog.DiscardHandler),
		Auth: []zksession.Auth{{Scheme: "nosuchscheme", Credentials: []byte("x")}}}))
	sub := s.Subscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Run(ctx)
	if !errors.Is(err, zk.ErrAuthFailed) || !strings.Contains(err.Error(), "AuthFailed") || ctx.Err() != nil {
		t.Errorf("Run = %v; want an AuthFailed error before the deadline", err)
	}
	if st, _ := sub.Take(); st.Status != session.Closed || st.Conn != nil {
		t.Errorf("last state %+v; want Closed, no client ever handed out", st)
	}
}

// TestSessionAuthCancelledWhileWaiting cancels Run while the credentials
// wait for a server that never answers: Run returns nil, promptly, and
// leaves no goroutine behind (goleak checks).
func TestSessionAuthCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	dialed := make(chan struct{})
	var once sync.Once
	cfg := zksession.Config{Servers: []string{silentServer(t)}, Timeout: 4 * time.Second,
		Auth: []zksession.Auth{{Scheme: "digest", Credentials: []byte("a:b")}},
		Dialer: func(network, address string, timeout time.Duration) (net.Conn, error) {
			once.Do(func() { close(dialed) })
			return net.DialTimeout(network, address, timeout)
		}}
	_, w, stop := runConfig(t, cfg)
	select {
	case <-dialed: // the client is created: Run waits for the credentials' answer
	case <-time.After(10 * time.Second):
		t.Fatal("no dial")
	}
	if took := stop(); took > 5*time.Second {
		t.Errorf("Run took %v to return after cancel", took)
	}
	w.waitFor("closed", time.Second, func(st zksession.State) bool { return st.Status == session.Closed })
}
