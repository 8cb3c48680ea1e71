package session

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// hosts is the client's own host provider (DNS lookup, shuffled order)
// with one change for a single server. The client (v1.0.4) pauses a second
// before it dials again the server it last held a session on, and drops
// the requests it queued, since it counts that dial as the start of a new
// round. With several servers it first tries the others; with a single
// server that pause came before every reconnection, so a dropped
// connection cost a second even when the server was up. Here the first
// dial after a connection that held a session goes at once; the dials
// after it, and every dial with several servers, keep the client's pace.
type hosts struct {
	zk.DNSHostProvider
	mu    sync.Mutex
	fresh bool // a connection held a session and no dial has gone since
}

var _ zk.HostProvider = (*hosts)(nil)

// Next returns the server to dial and whether the client should pause
// first.
func (h *hosts) Next() (server string, pause bool) {
	server, pause = h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fresh && h.DNSHostProvider.Len() == 1 {
		pause = false
	}
	h.fresh = false
	return server, pause
}

// Connected notes that a connection holds a session.
func (h *hosts) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.fresh = true
	h.mu.Unlock()
}
