package zktest_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

func TestStartServerRejectsBadOptions(t *testing.T) {
	t.Parallel()
	_, err := zktest.StartServer(context.Background(), zktest.Options{TickTime: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "TickTime") {
		t.Errorf("StartServer with a negative tick: error %v, want one naming TickTime", err)
	}
	_, err = zktest.StartServer(context.Background(), zktest.Options{QuorumProxies: true})
	if err == nil || !strings.Contains(err.Error(), "QuorumProxies") {
		t.Errorf("StartServer with quorum proxies: error %v, want one naming QuorumProxies", err)
	}
	_, err = zktest.StartEnsemble(context.Background(), 0, zktest.Options{})
	if err == nil {
		t.Error("StartEnsemble of 0 members: no error")
	}
}

// A session survives a server restart shorter than its timeout, and its
// data survives too.
func TestSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := zktest.Standalone(t, zktest.Options{})
	c := connect(t, []string{s.Addr()}, 8*time.Second)
	id := c.SessionID()
	if _, err := c.Create("/survivor", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m := c.mark()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "StateDisconnected", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "StateHasSession", func() bool {
		return sawInOrder(c.since(m), zk.StateDisconnected, zk.StateHasSession)
	})
	if got := c.SessionID(); got != id {
		t.Errorf("session after restart = %#x, want %#x", got, id)
	}
	if ok, _, err := c.Exists("/survivor"); err != nil || !ok {
		t.Errorf("Exists(/survivor) after restart = %v, %v; want true", ok, err)
	}
	t.Logf("client states: %q", c.history())
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Options.Log receives the server's output with a prefix; files under
// Options.Dir are kept after Close.
func TestServerLogAndDir(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	dir := t.TempDir()
	s := zktest.Standalone(t, zktest.Options{Dir: dir, Log: &log, MaxSessionTimeout: 3 * time.Second})
	_, port, _ := net.SplitHostPort(s.Addr())
	if want := "zk-" + port + ": "; !strings.Contains(log.String(), want) {
		t.Errorf("Log output lacks the prefix %q:\n%s", want, log.String())
	}
	if want := "maxSessionTimeout 3000 ms"; !strings.Contains(log.String(), want) {
		t.Errorf("Log output lacks %q", want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*", "zookeeper.log"))
	if err != nil || len(logs) != 1 {
		t.Errorf("zookeeper.log under Options.Dir after Close: %q, %v; want one", logs, err)
	}
}
