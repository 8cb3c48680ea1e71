package zksession_test

import (
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"

	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// waitFailure polls s.Failure until ok accepts it.
func waitFailure(t *testing.T, s *zksession.Session, within time.Duration, what string, ok func(up bool, err error) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		up, err := s.Failure()
		if ok(up, err) {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("Failure() = %v, %v after %v; want %s", up, err, within, what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestSessionFailureKeepsTheLastConnectionError refuses the first dials,
// then lets them through to a real server: Failure reports the refusal
// while no session is up, and nothing once one is.
func TestSessionFailureKeepsTheLastConnectionError(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	refused := errors.New("refused by the test")
	var open atomic.Bool
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		if !open.Load() {
			return nil, refused
		}
		return net.DialTimeout(network, address, timeout)
	}
	s, w, _ := runConfig(t, zksession.Config{Servers: []string{srv.Addr()}, Timeout: 2 * time.Second, Dialer: dial})
	waitFailure(t, s, 10*time.Second, "the refusal", func(up bool, err error) bool { return !up && errors.Is(err, refused) })
	open.Store(true)
	w.waitFor("up", 10*time.Second, actortest.IsUp)
	waitFailure(t, s, 10*time.Second, "up and no error", func(up bool, err error) bool { return up && err == nil })
}

// TestSessionFailureNamesAServerThatDoesNotAnswer dials a listener that
// closes every connection it accepts, as a server that is not ready does.
func TestSessionFailureNamesAServerThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-accepted })
	s, _, stop := runConfig(t, zksession.Config{Servers: []string{l.Addr().String()}, Timeout: 2 * time.Second})
	waitFailure(t, s, 10*time.Second, "no answer from "+l.Addr().String(), func(up bool, err error) bool {
		return !up && err != nil && strings.Contains(err.Error(), "no answer from "+l.Addr().String())
	})
	stop()
	if _, err := s.Failure(); errors.Is(err, zk.ErrClosing) || errors.Is(err, net.ErrClosed) {
		t.Errorf("Failure() after Run = %v, want the server's failure, not the shutdown's", err)
	}
}
