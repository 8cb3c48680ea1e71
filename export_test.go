package zkalloc

import "github.com/zkalloc/zkalloc/internal/zksession"

// WithWrapConn returns cfg with the ZooKeeper client wrapped by wrap, for
// tests and benchmarks that count requests.
func WithWrapConn(cfg Config, wrap func(zksession.Conn) zksession.Conn) Config {
	cfg.wrapConn = wrap
	return cfg
}

// Credentials returns the ID and password of a's ZooKeeper session, for
// tests that make the server expire it.
func Credentials(a *Allocator) (int64, []byte) { return a.sess.(*zksession.Session).Credentials() }
