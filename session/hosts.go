package session

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// hosts is the client's own host provider (DNS lookup, shuffled order)
// with another pace for reconnecting. The client (v1.0.4) pauses a second
// before it dials the server it last held a session on, and drops the
// requests it queued, since it counts that dial as the start of a new
// round; with a single server that is every reconnection, so a dropped
// connection cost a second even when the server was up. Here every server
// is dialed once, without a pause, after each connection that held a
// session; only a round after that starts with the client's pause.
type hosts struct {
	zk.DNSHostProvider
	mu    sync.Mutex
	dials int // since the last connection that held a session
}

var _ zk.HostProvider = (*hosts)(nil)

// Next returns the server to dial and whether the client should pause
// first.
func (h *hosts) Next() (server string, pause bool) {
	server, _ = h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials++
	if h.dials > h.DNSHostProvider.Len() {
		h.dials = 1
		return server, true
	}
	return server, false
}

// Connected notes that a connection holds a session.
func (h *hosts) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.dials = 0
	h.mu.Unlock()
}
