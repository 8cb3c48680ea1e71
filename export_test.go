package zkalloc

import (
	"time"

	"github.com/zkalloc/zkalloc/session"
)

// WithWrapConn returns cfg with the ZooKeeper client wrapped by wrap, for
// tests and benchmarks that count requests.
func WithWrapConn(cfg Config, wrap func(session.Conn) session.Conn) Config {
	cfg.wrapConn = wrap
	return cfg
}

// WithStuckMargin returns cfg with margin, instead of 10 s, added to the
// longest a hand-off can take before a member logs who holds the claims
// it waits for.
func WithStuckMargin(cfg Config, margin time.Duration) Config {
	cfg.stuckMargin = margin
	return cfg
}
