package zkalloc

import "github.com/zkalloc/zkalloc/session"

// WithWrapConn returns cfg with the ZooKeeper client wrapped by wrap, for
// tests and benchmarks that count requests.
func WithWrapConn(cfg Config, wrap func(session.Conn) session.Conn) Config {
	cfg.wrapConn = wrap
	return cfg
}
