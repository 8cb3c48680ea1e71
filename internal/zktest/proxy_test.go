package zktest_test

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// echoServer is a TCP echo server on loopback that counts its connections.
// Cleanup closes it and waits for its goroutines.
type echoServer struct {
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	accepted int
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.accepted++
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.accepted
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back within a deadline.
func roundTrip(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echo mismatch: " + string(buf))
	}
	return nil
}

// readErr reads from c until it fails (bounded by a deadline) and returns the error.
func readErr(c net.Conn, within time.Duration) error {
	c.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return err
		}
	}
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	e1, e2 := startEcho(t), startEcho(t)
	p := zktest.StartProxy(t, e1.ln.Addr().String(), e2.ln.Addr().String())
	addrs := p.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("Addrs() = %q, want 2", addrs)
	}
	for i, a := range addrs {
		if host, _, _ := net.SplitHostPort(a); host != "127.0.0.1" {
			t.Errorf("Addrs()[%d] = %q, want a 127.0.0.1 address", i, a)
		}
		if err := roundTrip(dial(t, a), "hello"); err != nil {
			t.Fatalf("via %s: %v", a, err)
		}
	}
	if e1.count() != 1 || e2.count() != 1 {
		t.Errorf("targets accepted %d and %d connections, want 1 each", e1.count(), e2.count())
	}
}

// Conns counts the open connections per target, so a test can tell which
// server a client is talking to.
func TestProxyConns(t *testing.T) {
	t.Parallel()
	e1, e2 := startEcho(t), startEcho(t)
	p := zktest.StartProxy(t, e1.ln.Addr().String(), e2.ln.Addr().String())
	if got := p.Conns(); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("Conns() before any connection = %v, want [0 0]", got)
	}
	for _, a := range []string{p.Addrs()[0], p.Addrs()[1], p.Addrs()[1]} {
		if err := roundTrip(dial(t, a), "hello"); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Conns(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("Conns() = %v, want [1 2]", got)
	}
	p.Reset()
	if got := p.Conns(); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("Conns() after Reset = %v, want [0 0]", got)
	}
}

func TestProxyReset(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := zktest.StartProxy(t, e.ln.Addr().String())
	c := dial(t, p.Addrs()[0])
	if err := roundTrip(c, "before"); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if err := readErr(c, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after Reset: %v, want ECONNRESET", err)
	}
	if err := roundTrip(dial(t, p.Addrs()[0]), "after"); err != nil {
		t.Errorf("new connection after Reset: %v", err)
	}
}

func TestProxyBlackhole(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := zktest.StartProxy(t, e.ln.Addr().String())
	old := dial(t, p.Addrs()[0])
	if err := roundTrip(old, "before"); err != nil {
		t.Fatal(err)
	}

	p.Blackhole(true)
	p.Blackhole(true) // twice: no effect
	// Nothing comes back on the open connection: proving an absence takes
	// a (short) bounded wait.
	if _, err := io.WriteString(old, "lost"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(old, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("read while black-holed: %v, want a timeout", err)
	}
	// A new connection is accepted but never reaches the target.
	fresh := dial(t, p.Addrs()[0])
	if _, err := io.WriteString(fresh, "lost too"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(fresh, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("read on a connection made while black-holed: %v, want a timeout", err)
	}
	if got := e.count(); got != 1 {
		t.Errorf("target accepted %d connections, want 1 (the one made before the black hole)", got)
	}

	p.Blackhole(false)
	for name, c := range map[string]net.Conn{"old": old, "fresh": fresh} {
		if err := readErr(c, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s connection after the black hole: %v, want ECONNRESET", name, err)
		}
	}
	if err := roundTrip(dial(t, p.Addrs()[0]), "after"); err != nil {
		t.Errorf("new connection after the black hole: %v", err)
	}
}

// BlackholeTarget silences one target's connections and leaves the
// others' alone.
func TestProxyBlackholeTarget(t *testing.T) {
	t.Parallel()
	e1, e2 := startEcho(t), startEcho(t)
	p := zktest.StartProxy(t, e1.ln.Addr().String(), e2.ln.Addr().String())
	a, b := dial(t, p.Addrs()[0]), dial(t, p.Addrs()[1])
	for _, c := range []net.Conn{a, b} {
		if err := roundTrip(c, "before"); err != nil {
			t.Fatal(err)
		}
	}
	p.BlackholeTarget(1, true)
	if err := roundTrip(a, "through"); err != nil {
		t.Errorf("to the other target while one is black-holed: %v", err)
	}
	if _, err := io.WriteString(b, "lost"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(b, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("read from the black-holed target: %v, want a timeout", err)
	}
	p.Blackhole(true)
	p.Blackhole(false) // lifts the proxy's black hole, not the target's
	if err := readErr(a, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("connection to the other target after the whole black hole: %v, want ECONNRESET", err)
	}
	fresh := dial(t, p.Addrs()[1])
	if _, err := io.WriteString(fresh, "lost too"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(fresh, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("read from the black-holed target after the whole black hole: %v, want a timeout", err)
	}
	p.BlackholeTarget(1, false)
	if err := readErr(b, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("black-holed connection after the black hole: %v, want ECONNRESET", err)
	}
	if err := roundTrip(dial(t, p.Addrs()[1]), "after"); err != nil {
		t.Errorf("new connection after the black hole: %v", err)
	}
	if got := e2.count(); got != 2 {
		t.Errorf("the black-holed target accepted %d connections, want 2 (before and after)", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestProxyTargetDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	p := zktest.StartProxy(t, down)
	// The reset can come before the dial returns, or after.
	c, err := net.DialTimeout("tcp", p.Addrs()[0], 5*time.Second)
	if err == nil {
		defer c.Close()
		err = readErr(c, 5*time.Second)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read via a proxy to a dead target: %v, want ECONNRESET", err)
	}
}

func TestProxyClose(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p, err := zktest.NewProxy(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addrs()[0])
	if err := roundTrip(c, "x"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	p.Reset()
	p.Blackhole(false)
	if err := readErr(c, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after Close: %v, want ECONNRESET", err)
	}
	if c, err := net.DialTimeout("tcp", p.Addrs()[0], time.Second); err == nil {
		c.Close()
		t.Error("dial after Close succeeded")
	}
	if _, err := zktest.NewProxy(); err == nil {
		t.Error("NewProxy() with no targets: no error")
	}
}

// Reject resets the client's end at once and keeps the target's end open
// but silent; lifted, it resets the target's end.
func TestProxyReject(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	p := zktest.StartProxy(t, ln.Addr().String())
	client := dial(t, p.Addrs()[0])
	if _, err := io.WriteString(client, "hello"); err != nil {
		t.Fatal(err)
	}
	var target net.Conn
	select {
	case target = <-accepted:
		t.Cleanup(func() { target.Close() })
	case <-time.After(5 * time.Second):
		t.Fatal("the target accepted nothing")
	}
	buf := make([]byte, 5)
	target.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(target, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("target read %q, %v; want hello", buf, err)
	}

	p.Reject(true)
	if err := readErr(client, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("client's read after Reject: %v, want ECONNRESET", err)
	}
	if _, err := io.WriteString(target, "lost"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(target, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("target's read after Reject: %v, want a timeout (silence)", err)
	}
	// A new connection is reset as soon as it is accepted; the reset can
	// come before the dial returns, or after.
	c, err := net.DialTimeout("tcp", p.Addrs()[0], 5*time.Second)
	if err == nil {
		defer c.Close()
		err = readErr(c, 5*time.Second)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a connection made while rejected: %v, want ECONNRESET", err)
	}

	p.Reject(false)
	if err := readErr(target, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("target's read after Reject is lifted: %v, want ECONNRESET", err)
	}
	fresh := dial(t, p.Addrs()[0])
	if _, err := io.WriteString(fresh, "after"); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Error("a connection made after Reject was lifted did not reach the target")
	}
}

// LastSent moves with what clients send, not with what targets answer.
func TestProxyLastSent(t *testing.T) {
	t.Parallel()
	e := startEcho(t)
	p := zktest.StartProxy(t, e.ln.Addr().String())
	if got := p.LastSent(); !got.IsZero() {
		t.Errorf("LastSent before any connection = %v, want zero", got)
	}
	c := dial(t, p.Addrs()[0])
	before := time.Now()
	if err := roundTrip(c, "ping"); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if got := p.LastSent(); got.Before(before) || got.After(after) {
		t.Errorf("LastSent = %v, want between %v and %v", got, before, after)
	}
	p.Blackhole(true)
	sent := p.LastSent()
	if _, err := io.WriteString(c, "dropped"); err != nil {
		t.Fatal(err)
	}
	if err := readErr(c, 100*time.Millisecond); !isTimeout(err) {
		t.Fatalf("read while black-holed: %v", err)
	}
	if got := p.LastSent(); !got.Equal(sent) {
		t.Errorf("LastSent moved to %v while black-holed, want %v still", got, sent)
	}
}

// RejectTarget refuses one target's connections at once and leaves the
// others alone.
func TestProxyRejectTarget(t *testing.T) {
	t.Parallel()
	e1, e2 := startEcho(t), startEcho(t)
	p := zktest.StartProxy(t, e1.ln.Addr().String(), e2.ln.Addr().String())
	a, b := dial(t, p.Addrs()[0]), dial(t, p.Addrs()[1])
	for _, c := range []net.Conn{a, b} {
		if err := roundTrip(c, "before"); err != nil {
			t.Fatal(err)
		}
	}
	p.RejectTarget(1, true)
	if err := readErr(b, 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read from the rejected target: %v, want ECONNRESET", err)
	}
	if got := p.Conns(); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("Conns() with target 1 rejected = %v, want [1 0]", got)
	}
	if err := roundTrip(a, "through"); err != nil {
		t.Errorf("to the other target while one is rejected: %v", err)
	}
	c, err := net.DialTimeout("tcp", p.Addrs()[1], 5*time.Second)
	if err == nil {
		defer c.Close()
		err = readErr(c, 5*time.Second)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a connection to the rejected target: %v, want ECONNRESET", err)
	}
	p.RejectTarget(1, false)
	if err := roundTrip(dial(t, p.Addrs()[1]), "after"); err != nil {
		t.Errorf("new connection after the rejection: %v", err)
	}
}
