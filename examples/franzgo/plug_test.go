package franzgo_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// plug forwards TCP connections to a ZooKeeper server until it is
// pulled: then every connection through it closes and new ones are
// refused, as when the member's process dies. A member whose plug is
// pulled keeps running, cut off from ZooKeeper, and its session expires
// on the server after its timeout.
type plug struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and the copies

	mu     sync.Mutex
	conns  map[net.Conn]bool
	pulled bool
}

// startPlug starts a plug to target on a free loopback port, pulled when
// the test ends.
func startPlug(t *testing.T, target string) *plug {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &plug{ln: ln, target: target, conns: make(map[net.Conn]bool)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Pull)
	return p
}

// Addr is the address to connect to instead of the server's.
func (p *plug) Addr() string { return p.ln.Addr().String() }

func (p *plug) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // pulled
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go p.copy(c, s)
		go p.copy(s, c)
	}
}

// track registers a forwarded pair, or closes it if the plug is pulled.
func (p *plug) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pulled {
		c.Close()
		s.Close()
		return false
	}
	p.conns[c], p.conns[s] = true, true
	return true
}

// copy forwards from one end to the other; when either end is done, it
// closes both, so the other copy ends too.
func (p *plug) copy(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Pull closes the listener and every connection through it, and returns
// once nothing of the plug runs. Pulling twice does nothing.
func (p *plug) Pull() {
	p.mu.Lock()
	if !p.pulled {
		p.pulled = true
		p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}
