package actortest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/session"
)

// FailingConn fails every request with zk.ErrConnectionClosed while Fail
// is set, as the client does with the requests in flight when its
// connection drops; SessionID still answers. Use it as a session's
// [zksession.Config.WrapConn]. It is safe for concurrent use.
type FailingConn struct {
	zksession.Conn
	Fail *atomic.Bool
}

var _ zksession.Conn = FailingConn{}

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

// ResumeAfterRetry is the middle of a test that a retry scheduled in one
// connection does not hold up the next: it waits until clock has timers
// timers waiting (the actor has scheduled its retry), lets requests
// through again, cuts the connection with reset, and waits until the same
// session is Up on a new connection, taking states from probe into last.
// It returns that state.
func ResumeAfterRetry(tb testing.TB, clock *actor.FakeClock, timers int, fail *atomic.Bool, reset func(), probe *actor.Latest[zksession.State], last *zksession.State) zksession.State {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.WaitTimers(ctx, timers); err != nil {
		tb.Fatal("no retry was scheduled after the failure")
	}
	fail.Store(false)
	sid, before := last.SessionID, last.Reconnects
	reset()
	st := Await(tb, probe, last, 10*time.Second, "session up again", func(st zksession.State) bool {
		return st.Status == session.Up && st.Reconnects > before
	})
	if st.SessionID != sid {
		tb.Fatalf("the session changed from %#x to %#x after a reset", sid, st.SessionID)
	}
	return st
}
