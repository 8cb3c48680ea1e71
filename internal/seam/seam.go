// Package seam is where an Allocator takes its actors from: the four
// actors it runs around its member loop, as typed interfaces ([Actors]),
// and a registry of in-memory backends that build them in place of
// ZooKeeper's, for package zkalloctest.
//
// A backend is registered under a name ([Register]) as a database/sql
// driver is, and named in Config.Servers, alone: zkalloc.New builds the
// Allocator's actors with it then, and runs them exactly as it runs its
// ZooKeeper actors, with the same member loop, drain, DepartureDelay,
// Stats and fatal errors. Nothing outside the module can register one,
// and a registered name is never a server's address (its port is not a
// number), so no real configuration reaches a backend. The root package
// exports nothing for it.
package seam

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Config is what a [Backend] is told of the Allocator it builds actors
// for, from its Config with the defaults filled in.
type Config struct {
	// Member is the member's name.
	Member string
	// Seed is Config.Partitions, normalized: the partitions actor merges
	// it into the shared set in the first session.
	Seed map[string][]int32
	// Seats says that the members actor keeps seats (DepartureDelay > 0):
	// it keeps this member's seat, and lists the group's in its Views.
	Seats bool
	// SessionTimeout is the session timeout asked for.
	SessionTimeout time.Duration
	// Logger is the Allocator's, with the group and member named.
	Logger *slog.Logger
	// Sticky says that the strategy is the sticky one: the backend
	// gives an Assigner, and its member views carry the weights and
	// drain marks.
	Sticky bool
	// Weight is this member's weight (Config.Weight, 1 by default).
	Weight int
}

// Backend builds the actors of one Allocator. zkalloc.New calls it once,
// and the Allocator then runs what it returns, which must start nothing
// before Run.
type Backend func(Config) Actors

var registry struct {
	mu       sync.Mutex
	last     uint64
	backends map[string]Backend
}

// Register registers b under a new name, which it returns, until
// unregister is called: an Allocator whose Config.Servers is that name
// alone takes its actors from b. The name is "<prefix>:backend-<n>".
// Safe for concurrent use.
func Register(prefix string, b Backend) (name string, unregister func()) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.last++
	name = fmt.Sprintf("%s:backend-%d", prefix, registry.last)
	if registry.backends == nil {
		registry.backends = make(map[string]Backend)
	}
	registry.backends[name] = b
	return name, func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		delete(registry.backends, name)
	}
}

// Lookup returns the backend that servers name, if servers is one name
// under which a backend is registered. Safe for concurrent use.
func Lookup(servers []string) (Backend, bool) {
	if len(servers) != 1 {
		return nil, false
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	b, ok := registry.backends[servers[0]]
	return b, ok
}
