package zktest_test

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// quietLogger drops go-zookeeper's log lines, which would otherwise flood
// the standard logger.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// boundedDialer dials connections on which any deadline further away than
// the session timeout is brought forward to a third of it. Only the
// client's handshake sets such deadlines (ten times its receive timeout in
// v1.0.4, which nothing interrupts): a connection accepted while a server
// restarts can go unanswered, and the client would wait far past the
// session's expiry. The session package bounds the handshake the same way,
// by reading the connect response; a threshold is enough here.
func boundedDialer(timeout time.Duration) zk.Dialer {
	return func(network, address string, dialTimeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, dialTimeout)
		if err != nil {
			return nil, err
		}
		return boundedConn{Conn: c, timeout: timeout}, nil
	}
}

type boundedConn struct {
	net.Conn
	timeout time.Duration
}

func (c boundedConn) bound(t time.Time) time.Time {
	if now := time.Now(); t.After(now.Add(c.timeout)) {
		return now.Add(c.timeout / 3)
	}
	return t
}

func (c boundedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.bound(t)) }
func (c boundedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.bound(t)) }
func (c boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.bound(t)) }

// client is a go-zookeeper connection whose session events are recorded by
// one goroutine, which ends when the client's event channel is closed:
// go-zookeeper closes it after its connection loop has ended.
type client struct {
	*zk.Conn
	done chan struct{} // closed when the event channel has been drained and closed

	mu     sync.Mutex
	states []zk.State // session states in order of arrival
	start  time.Time
	log    []string // "+1.234s StateDisconnected", for failure messages
}

// connect connects to addrs with the given session timeout and registers a
// cleanup that closes the client and waits for its loop to end.
func connect(t *testing.T, addrs []string, timeout time.Duration) *client {
	t.Helper()
	conn, events, err := zk.Connect(addrs, timeout, zk.WithLogger(quietLogger{}), zk.WithDialer(boundedDialer(timeout)))
	if err != nil {
		t.Fatal(err)
	}
	c := &client{Conn: conn, done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(c.done)
		for ev := range events {
			if ev.Type != zk.EventSession {
				continue
			}
			c.mu.Lock()
			c.states = append(c.states, ev.State)
			c.log = append(c.log, fmt.Sprintf("+%.3fs %v", time.Since(c.start).Seconds(), ev.State))
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("go-zookeeper's loop did not end within 10s of Close")
		}
	})
	waitUntil(t, 20*time.Second, "first session", func() bool { return conn.State() == zk.StateHasSession })
	return c
}

// mark returns a position in the recorded states.
func (c *client) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states)
}

// since returns the states recorded after mark m.
func (c *client) since(m int) []zk.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.states[m:])
}

// history returns the timestamped event log.
func (c *client) history() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// sawInOrder reports whether want occurs in got as a subsequence.
func sawInOrder(got []zk.State, want ...zk.State) bool {
	i := 0
	for _, s := range got {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}

// waitUntil polls cond every 10ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
