package session

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// gatedConn is the client as the session hands it out. It refuses new
// requests once shutdown has begun and lets the session wait for those in
// flight before it closes the client.
//
// This works around a deadlock in the client (v1.0.4): a request queued in
// the same instant as Close is answered once by the queueing code and may
// be answered twice more when the connection then fails, but its reply
// channel holds two, so the client's loop blocks forever on the third and
// never exits. With no request entering during Close, that cannot happen.
type gatedConn struct {
	c    *zk.Conn
	mu   sync.Mutex
	shut bool
	busy int           // requests in flight
	idle chan struct{} // closed once shut and no request is in flight
}

var _ Conn = (*gatedConn)(nil)

func newGatedConn(c *zk.Conn) *gatedConn { return &gatedConn{c: c, idle: make(chan struct{})} }

func (g *gatedConn) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		return false
	}
	g.busy++
	return true
}

func (g *gatedConn) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	if g.shut && g.busy == 0 {
		close(g.idle)
	}
}

// shutdown refuses new requests and returns a channel closed when none is
// in flight.
func (g *gatedConn) shutdown() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.shut {
		g.shut = true
		if g.busy == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

func (g *gatedConn) SessionID() int64 { return g.c.SessionID() }

func (g *gatedConn) Get(path string) ([]byte, *zk.Stat, error) {
	if !g.enter() {
		return nil, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.Get(path)
}

func (g *gatedConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if !g.enter() {
		return nil, nil, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.GetW(path)
}

func (g *gatedConn) Children(path string) ([]string, *zk.Stat, error) {
	if !g.enter() {
		return nil, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.Children(path)
}

func (g *gatedConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if !g.enter() {
		return nil, nil, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.ChildrenW(path)
}

func (g *gatedConn) Exists(path string) (bool, *zk.Stat, error) {
	if !g.enter() {
		return false, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.Exists(path)
}

func (g *gatedConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if !g.enter() {
		return false, nil, nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.ExistsW(path)
}

func (g *gatedConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if !g.enter() {
		return "", zk.ErrClosing
	}
	defer g.exit()
	return g.c.Create(path, data, flags, acl)
}

func (g *gatedConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if !g.enter() {
		return nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.Set(path, data, version)
}

func (g *gatedConn) Delete(path string, version int32) error {
	if !g.enter() {
		return zk.ErrClosing
	}
	defer g.exit()
	return g.c.Delete(path, version)
}

func (g *gatedConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if !g.enter() {
		return nil, zk.ErrClosing
	}
	defer g.exit()
	return g.c.Multi(ops...)
}
