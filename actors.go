package zkalloc

import (
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The ZooKeeper actors are what the Allocator's seam takes.
var (
	_ seam.Session    = (*zksession.Session)(nil)
	_ seam.Members    = (*members.Actor)(nil)
	_ seam.Partitions = (*partset.Set)(nil)
	_ seam.Claims     = (*claims.Actor)(nil)
	_ seam.Assigner   = (*record.Runner)(nil)
)

// Periods of the actors' safety re-reads, which their watches make all
// but redundant: of the member list, and of the whole shared set.
const (
	membersResync = 30 * time.Second
	setResync     = 5 * time.Minute
)

// zkActors builds the actors that keep the group in ZooKeeper, with the
// configuration cfg (its defaults filled in) gives them.
func zkActors(cfg Config, log *slog.Logger, clock actor.Clock) seam.Actors {
	// go-zookeeper has no chroot: the library's paths carry it instead.
	paths := zkpath.Group{Root: cfg.chroot + cfg.Root, Group: cfg.Group}

	auth := make([]zksession.Auth, len(cfg.Auth))
	for i, a := range cfg.Auth {
		auth[i] = zksession.Auth{Scheme: a.Scheme, Credentials: slices.Clone(a.Credentials)}
	}
	sessCfg := zksession.Config{
		Servers: cfg.Servers,
		Timeout: cfg.SessionTimeout,
		Dialer:  net.DialTimeout,
		Auth:    auth,
		Logger:  log,
		Clock:   clock,
	}
	if cfg.DisconnectGrace > 0 {
		// Partitions kept while disconnected rest on the lease alone: it
		// must be one that a deposed leader cannot renew (internal/zksession/lease.go).
		sessCfg.QuorumCheck = paths.Dir()
	}
	sess := zksession.New(sessCfg)
	info := membership.ThisProcess(cfg.Strategy.Name())
	if cfg.Weight != 1 {
		info.Weight = cfg.Weight
	}
	roster := members.New(members.Config{
		Paths:  paths,
		Member: cfg.Member,
		Info:   info,
		Seats:  cfg.DepartureDelay > 0,
		// The sticky record is keyed by the views' zxids: every member
		// of it lists the seats, so that those agree whatever each
		// member's DepartureDelay.
		ListSeats: cfg.Strategy == rebalance.StickyStrategy,
		Drained:   cfg.Strategy == rebalance.StickyStrategy,
		Session:   sess.Subscribe(),
		ACL:       cfg.ACL,
		Resync:    membersResync,
		Logger:    log,
		Clock:     clock,
	})
	set := partset.New(partset.Config{
		Paths:   paths,
		Seed:    cfg.Partitions,
		Session: sess.Subscribe(),
		ACL:     cfg.ACL,
		Resync:  setResync,
		Logger:  log,
		Clock:   clock,
	})
	owners := claims.New(claims.Config{
		Paths:    paths,
		Member:   cfg.Member,
		Session:  sess.Subscribe(),
		Logger:   log,
		Clock:    clock,
		Strategy: cfg.Strategy.Name(),
		ACL:      cfg.ACL,
		// With the granted session timeout, these bound a hand-off: a
		// wanted claim held longer is warned of as stuck.
		Settle:         cfg.Settle,
		ReleaseTimeout: cfg.ReleaseTimeout,
	})
	acts := seam.Actors{Session: sess, Members: roster, Partitions: set, Claims: owners}
	if cfg.Strategy == rebalance.StickyStrategy {
		acts.Assigner = record.New(record.Config{
			Paths:   paths,
			Member:  cfg.Member,
			ACL:     cfg.ACL,
			Session: sess.Subscribe(),
			Logger:  log,
			Clock:   clock,
		})
	}
	return acts
}
