package zksession

import (
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// hosts is the client's own host provider (DNS lookup, shuffled order)
// with one change for a single server. The client (v1.0.4) pauses a second
// before it dials again the server it last held a session on, and drops
// the requests it queued, since it counts that dial as the start of a new
// round. With several servers it first tries the others; with a single
// server that pause came before every reconnection, so a dropped
// connection cost a second even when the server was up. Here the first
// dial after a connection that held a session for at least a pause goes
// at once; the dials after it, those after a connection that failed
// sooner (a server dropping every session would otherwise be dialed in a
// loop), and every dial with several servers keep the client's pace.
type hosts struct {
	zk.DNSHostProvider
	now         func() time.Time
	mu          sync.Mutex
	connectedAt time.Time // when a connection got its session; zero once a dial has gone since
}

var _ zk.HostProvider = (*hosts)(nil)

// clientPause is the client's pause before a new round of dials.
const clientPause = time.Second

func newHosts() *hosts { return &hosts{now: time.Now} }

// Next returns the server to dial and whether the client should pause
// first.
func (h *hosts) Next() (server string, pause bool) {
	server, pause = h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.connectedAt.IsZero() && h.DNSHostProvider.Len() == 1 && h.now().Sub(h.connectedAt) >= clientPause {
		pause = false
	}
	h.connectedAt = time.Time{}
	return server, pause
}

// Connected notes that a connection holds a session.
func (h *hosts) Connected() {
	h.DNSHostProvider.Connected()
	h.mu.Lock()
	h.connectedAt = h.now()
	h.mu.Unlock()
}
