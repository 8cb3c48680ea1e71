package zktest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// A client behind the proxy creates a node; Reset drops its connection and
// it reconnects with the same session.
func TestProxyResetKeepsSession(t *testing.T) {
	t.Parallel()
	s := zktest.Standalone(t, zktest.Options{})
	p := zktest.StartProxy(t, s.Addr())
	c := connect(t, p.Addrs(), 4*time.Second)
	id := c.SessionID()
	if _, err := c.Create("/reset", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create through the proxy: %v", err)
	}

	m := c.mark()
	begin := time.Now()
	p.Reset()
	waitUntil(t, 10*time.Second, "Disconnected then HasSession", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected, zk.StateHasSession)
	})
	t.Logf("reconnected %v after Reset; states %q", time.Since(begin).Round(time.Millisecond), c.since(m))
	if got := c.SessionID(); got != id {
		t.Errorf("session after Reset = %#x, want the same %#x", got, id)
	}
	if ok, _, err := c.Exists("/reset"); err != nil || !ok {
		t.Errorf("Exists(/reset) after Reset = %v, %v; want true", ok, err)
	}
}

// A black hole longer than the session timeout makes the server expire the
// session; the client learns it only once the black hole is lifted.
func TestProxyBlackholeExpiresSession(t *testing.T) {
	t.Parallel()
	s := zktest.Standalone(t, zktest.Options{})
	p := zktest.StartProxy(t, s.Addr())
	const timeout = 2 * time.Second
	c := connect(t, p.Addrs(), timeout)
	id := c.SessionID()
	if _, err := c.Create("/ephemeral", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	hexID := fmt.Sprintf("0x%x", id)
	sessionOnServer := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dump, err := zktest.FourLetter(ctx, s.Addr(), "dump")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(dump, hexID)
	}
	if !sessionOnServer() {
		t.Fatalf("dump does not list session %s with its ephemeral node", hexID)
	}

	m := c.mark()
	begin := time.Now()
	p.Blackhole(true)
	waitUntil(t, 10*time.Second, "the client to notice the black hole", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected)
	})
	noticed := time.Since(begin)
	waitUntil(t, 15*time.Second, "the server to expire the session", func() bool { return !sessionOnServer() })
	expired := time.Since(begin)
	// The client's next attempt connects to the proxy (StateConnected is
	// TCP only) and then hears nothing.
	waitUntil(t, 10*time.Second, "the client to reconnect into the black hole", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected, zk.StateConnected)
	})
	if got := c.since(m); sawInOrder(got, zk.StateExpired) || sawInOrder(got, zk.StateHasSession) {
		t.Errorf("client states while black-holed: %q; it cannot learn anything", got)
	}

	p.Blackhole(false)
	lifted := time.Now()
	waitUntil(t, 10*time.Second, "Expired then HasSession", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected, zk.StateExpired, zk.StateHasSession)
	})
	t.Logf("client noticed after %v, server expired after %v, new session %v after lifting; states %q",
		noticed.Round(time.Millisecond), expired.Round(time.Millisecond),
		time.Since(lifted).Round(time.Millisecond), c.since(m))
	if got := c.SessionID(); got == id || got == 0 {
		t.Errorf("session after expiry = %#x, want a new one (old %#x)", got, id)
	}
	if ok, _, err := c.Exists("/ephemeral"); err != nil || ok {
		t.Errorf("Exists(/ephemeral) after expiry = %v, %v; want false", ok, err)
	}
}
