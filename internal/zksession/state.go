package zksession

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/session"
)

// State is one snapshot of the session as the I/O actors receive it: the
// [session.State], and the connection to issue requests on. It is a
// value: nothing in it changes after it is published.
type State struct {
	session.State
	// Conn issues requests. It is set in every state after the first
	// connection attempt; requests fail unless the session is Up.
	Conn Conn
}

// Conn is the subset of the ZooKeeper client's methods the actors use. A
// *zk.Conn satisfies it; instrumentation may wrap it (see
// [Config.WrapConn]). It is safe for concurrent use.
type Conn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	// Sync makes the reads sent after it see at least what the
	// ensemble's leader had committed when it handled the sync.
	Sync(path string) (string, error)
	SessionID() int64
}

var _ Conn = (*zk.Conn)(nil)
