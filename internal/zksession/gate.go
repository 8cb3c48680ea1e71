package zksession

import (
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// gatedConn is the client as the session hands it out. Its requests wait
// for link to be ready (see [link]); it refuses new ones once shutdown has
// begun and lets the session wait for those in flight before it closes
// the client.
//
// The refusal works around a deadlock in the client (v1.0.4): a request
// queued in the same instant as Close is answered once by the queueing
// code and may be answered twice more when the connection then fails, but
// its reply channel holds two, so the client's loop blocks forever on the
// third and never exits. With no request entering during Close, that
// cannot happen.
type gatedConn struct {
	c    *zk.Conn
	link *link
	stop chan struct{} // closed when shutdown begins: waiting requests give up
	mu   sync.Mutex
	shut bool
	busy int           // requests in flight
	idle chan struct{} // closed once shut and no request is in flight
}

var _ Conn = (*gatedConn)(nil)

func newGatedConn(c *zk.Conn, l *link) *gatedConn {
	return &gatedConn{c: c, link: l, stop: make(chan struct{}), idle: make(chan struct{})}
}

// enter waits until a request may go to the client and counts it in
// flight; the caller calls exit with the session returned when the
// request returns.
func (g *gatedConn) enter() (int64, error) {
	session, err := g.link.wait(g.stop)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		g.link.done(session)
		return 0, zk.ErrClosing
	}
	g.busy++
	return session, nil
}

func (g *gatedConn) exit(session int64) {
	g.link.done(session)
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
		close(g.stop)
		if g.busy == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

// watched notes a watch set by a request that succeeded.
func (g *gatedConn) watched(err error) {
	if err == nil {
		g.link.watch()
	}
}

func (g *gatedConn) SessionID() int64 { return g.c.SessionID() }

// sync sends a sync, for the lease, and returns the session it went in.
func (g *gatedConn) sync() (int64, error) {
	session, err := g.enter()
	if err != nil {
		return 0, err
	}
	defer g.exit(session)
	_, err = g.c.Sync(syncPath)
	return session, err
}

// check sends a multi that only checks the version (any) of the node at
// path, for the quorum lease, and returns the session it went in. It
// changes nothing, but the ensemble commits it as a transaction (see
// lease.go). The error is nil only if the check succeeded.
func (g *gatedConn) check(path string) (int64, error) {
	session, err := g.enter()
	if err != nil {
		return 0, err
	}
	defer g.exit(session)
	res, err := g.c.Multi(&zk.CheckVersionRequest{Path: path, Version: -1})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("session: a check answered with %d results", len(res))
	}
	if err == nil {
		err = res[0].Error
	}
	return session, err
}

func (g *gatedConn) Get(path string) ([]byte, *zk.Stat, error) {
	session, err := g.enter()
	if err != nil {
		return nil, nil, err
	}
	defer g.exit(session)
	return g.c.Get(path)
}

func (g *gatedConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	session, err := g.enter()
	if err != nil {
		return nil, nil, nil, err
	}
	defer g.exit(session)
	data, stat, ch, err := g.c.GetW(path)
	g.watched(err)
	return data, stat, ch, err
}

func (g *gatedConn) Children(path string) ([]string, *zk.Stat, error) {
	session, err := g.enter()
	if err != nil {
		return nil, nil, err
	}
	defer g.exit(session)
	return g.c.Children(path)
}

func (g *gatedConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	session, err := g.enter()
	if err != nil {
		return nil, nil, nil, err
	}
	defer g.exit(session)
	kids, stat, ch, err := g.c.ChildrenW(path)
	g.watched(err)
	return kids, stat, ch, err
}

func (g *gatedConn) Exists(path string) (bool, *zk.Stat, error) {
	session, err := g.enter()
	if err != nil {
		return false, nil, err
	}
	defer g.exit(session)
	return g.c.Exists(path)
}

func (g *gatedConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	session, err := g.enter()
	if err != nil {
		return false, nil, nil, err
	}
	defer g.exit(session)
	ok, stat, ch, err := g.c.ExistsW(path)
	g.watched(err)
	return ok, stat, ch, err
}

func (g *gatedConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	session, err := g.enter()
	if err != nil {
		return "", err
	}
	defer g.exit(session)
	return g.c.Create(path, data, flags, acl)
}

func (g *gatedConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	session, err := g.enter()
	if err != nil {
		return nil, err
	}
	defer g.exit(session)
	return g.c.Set(path, data, version)
}

func (g *gatedConn) Delete(path string, version int32) error {
	session, err := g.enter()
	if err != nil {
		return err
	}
	defer g.exit(session)
	return g.c.Delete(path, version)
}

func (g *gatedConn) Sync(path string) (string, error) {
	session, err := g.enter()
	if err != nil {
		return "", err
	}
	defer g.exit(session)
	return g.c.Sync(path)
}

func (g *gatedConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	session, err := g.enter()
	if err != nil {
		return nil, err
	}
	defer g.exit(session)
	return g.c.Multi(ops...)
}
