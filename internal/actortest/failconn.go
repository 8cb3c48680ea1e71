package actortest

import (
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/session"
)

// FailingConn fails every request with zk.ErrConnectionClosed while Fail
// is set, as the client does with the requests in flight when its
// connection drops; SessionID still answers. Use it as a session's
// [session.Config.WrapConn]. It is safe for concurrent use.
type FailingConn struct {
	session.Conn
	Fail *atomic.Bool
}

var _ session.Conn = FailingConn{}

func (c FailingConn) Get(p string) ([]byte, *zk.Stat, error) {
	if c.Fail.Load() {
		return nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.Get(p)
}

func (c FailingConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if c.Fail.Load() {
		return nil, nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.GetW(p)
}

func (c FailingConn) Children(p string) ([]string, *zk.Stat, error) {
	if c.Fail.Load() {
		return nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.Children(p)
}

func (c FailingConn) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if c.Fail.Load() {
		return nil, nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.ChildrenW(p)
}

func (c FailingConn) Exists(p string) (bool, *zk.Stat, error) {
	if c.Fail.Load() {
		return false, nil, zk.ErrConnectionClosed
	}
	return c.Conn.Exists(p)
}

func (c FailingConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if c.Fail.Load() {
		return false, nil, nil, zk.ErrConnectionClosed
	}
	return c.Conn.ExistsW(p)
}

func (c FailingConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if c.Fail.Load() {
		return "", zk.ErrConnectionClosed
	}
	return c.Conn.Create(p, data, flags, acl)
}

func (c FailingConn) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	if c.Fail.Load() {
		return nil, zk.ErrConnectionClosed
	}
	return c.Conn.Set(p, data, version)
}

func (c FailingConn) Delete(p string, version int32) error {
	if c.Fail.Load() {
		return zk.ErrConnectionClosed
	}
	return c.Conn.Delete(p, version)
}

func (c FailingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if c.Fail.Load() {
		return nil, zk.ErrConnectionClosed
	}
	return c.Conn.Multi(ops...)
}
