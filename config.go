package zkalloc

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Defaults for the zero values of [Config].
const (
	DefaultRoot           = "/zkalloc"
	DefaultSessionTimeout = 10 * time.Second
	// DefaultReleaseTimeout is 8 s, below the shortest common grace
	// period between an orchestrator's SIGTERM and its SIGKILL (Docker's
	// stop: 10 s; Kubernetes and ECS: 30 s; systemd: 90 s): a Close
	// called on SIGTERM waits at most ReleaseTimeout for the consumer's
	// ack, then closes the session, and so leaves cleanly, its claims
	// deleted by the server, before the process is killed, even under
	// Docker's default. (At 30 s, the old default, Kubernetes killed the
	// pod just as Close gave up, and the others waited a session timeout
	// more for its claims.) A consumer that needs longer to stop its
	// partitions should raise both ReleaseTimeout and the grace period.
	DefaultReleaseTimeout = 8 * time.Second
)

// ErrInvalidConfig is wrapped by the errors of [New]; the message names
// the field and the bad value.
var ErrInvalidConfig = errors.New("zkalloc: invalid config")

// Config configures an [Allocator]. Servers, Group and Member are
// required; every other zero value means the documented default.
type Config struct {
	// Servers are ZooKeeper's addresses: "host:port", port 2181 if left
	// out, an IPv6 address in brackets ("[::1]:2181"). New refuses a port
	// that is not a number from 1 to 65535 and an empty host, naming the
	// element. An element may also hold a comma-separated list of them,
	// as in a ZooKeeper connect string.
	//
	// A chroot suffix is honoured as ZooKeeper's own clients do:
	// "zk1:2181,zk2:2181/kafka", or {"zk1:2181/kafka", "zk2:2181/kafka"}.
	// Every node of the group then lives under the chroot
	// (<chroot><Root>/groups/<Group>/...). Servers that carry a chroot
	// must carry the same one (New refuses others); those without one
	// take it, so it may be given on the last server only. The chroot is
	// a path like Root, and it is created when missing, like Root.
	Servers []string
	// Group names the consumer group: members of the same group under the
	// same Root share one partition set.
	Group string
	// Member names this member; it must be unique in the group while it
	// runs. Group and Member are ZooKeeper node names of 1 to 249 bytes
	// ([rebalance.MaxNameLen], Kafka's limit on topic names): no '/', no
	// control or invisible characters, none beyond U+FFFF (such as emoji,
	// which ZooKeeper refuses), not "." or "..".
	Member string
	// Root is the ZooKeeper path under which groups live; default
	// [DefaultRoot].
	Root string
	// Partitions is this member's seed: merged into the group's shared set
	// when the allocator starts (never removed by it). Topic names are
	// Kafka's: 1 to 249 bytes of a-z A-Z 0-9 . _ - and not "." or ".."
	// ([rebalance.ValidateTopic]; no ':', ',', ';' or whitespace, so that
	// "topic:id" reads one way), [partitions.MaxTopicsBytes] in all; IDs
	// must not be negative. New's error names the first character refused
	// and its byte offset. [Allocator.AddPartitions] and
	// [Allocator.RemovePartitions] check names the same way; a topic node
	// that another program wrote with a name outside these rules is
	// reported as corrupt and left unassigned.
	Partitions map[string][]int32
	// Strategy computes the assignment; default
	// [rebalance.StickyStrategy]: the sticky assignment over the group's
	// agreed record in ZooKeeper, which moves only the partitions that
	// must move, honours Weight and `zkalloc drain` (docs/sticky.md).
	// [rebalance.Balanced], [rebalance.RoundRobin] and [rebalance.Range]
	// are stateless: each member computes the whole assignment from the
	// member list and the set alone, with no record, and moves about twice
	// the minimum on a change. Earlier versions defaulted to Balanced: a
	// group that runs it keeps it by setting it here, or upgrades to
	// sticky member by member (sticky members compute Balanced's
	// assignment until no member runs it; docs/operating.md, "Upgrading
	// a group to the sticky default").
	// Apart from that upgrade, all members of a group must use the same
	// one: members that disagree wait for claims the others keep, and
	// some partitions are never consumed. Start refuses to join a group whose members run another
	// ([ErrStrategyMismatch]); a member that, despite that, has waited for
	// another's claims longer than a hand-off can take (5 × Settle +
	// 3 × ReleaseTimeout + the session timeout granted + 10 s) logs who holds
	// them, as an error naming both strategies when they differ.
	Strategy rebalance.Strategy
	// Weight is this member's weight in the sticky strategy: its share of
	// the partitions is partitions × Weight / the sum of the weights of
	// the members that are not drained, rounded so that the shares sum to
	// the partitions. Default 1; at most [rebalance.MaxWeight]. It is
	// published in the member's node. For mixed hardware or a canary;
	// New refuses a Weight other than 1 with a stateless Strategy, which
	// has no weights.
	Weight int
	// SessionTimeout is the ZooKeeper session timeout asked for; default
	// [DefaultSessionTimeout]. The server may grant another within its
	// bounds (by default 2 to 20 of its ticks).
	SessionTimeout time.Duration
	// Settle is how long the member list and partition set must be quiet
	// before the assignment is recomputed, so that a burst of changes
	// (a rolling restart) moves partitions once; a burst that goes on is
	// cut short at five times Settle. Default 0: recompute at once.
	Settle time.Duration
	// ReleaseTimeout bounds how long a revoked partition waits for the
	// consumer's [Update.Ack], counted from when the consumer receives
	// the Update that revokes it from [Allocator.Updates], before it is
	// handed on anyway (logged as an error: the consumer may still be
	// working on it); default [DefaultReleaseTimeout]. A revocation the
	// consumer has not received is handed on twice ReleaseTimeout after
	// it was published, so a consumer that stops reading cannot stall
	// the group: a revoked partition is kept at most three times
	// ReleaseTimeout. [Allocator.Close] waits at most ReleaseTimeout
	// from its call for the ack of its final Update; [Allocator.Shutdown]
	// as long as its context allows, within the same bounds as a
	// hand-off. Keep it below the grace period the process gets between
	// SIGTERM and SIGKILL (see [DefaultReleaseTimeout]), so that Close
	// returns, the session closed, before the kill.
	ReleaseTimeout time.Duration
	// DisconnectGrace keeps the assigned partitions for up to this long
	// after the connection to ZooKeeper is lost, so that a short network
	// blip does not stop the consumer. Default 0: revoke everything at once.
	// However long it is, the partitions are revoked when the session's
	// lease runs out: 80% of the granted session timeout after a quorum of
	// the ensemble last saw the session, before any leader can expire it
	// and let another member take them.
	//
	// With a grace, the lease is renewed only by requests the ensemble
	// must commit: every quarter of the session timeout, the member sends
	// a multi that checks the version of the group's node (it changes
	// nothing). A leader cut off from its quorum answers the syncs that
	// renew the lease without a grace, and a new leader elected meanwhile
	// can expire the session before such a lease runs out (by up to about
	// 1.5 ticks - 0.45 × the session timeout: 1.2 s with ZooKeeper's
	// sample tickTime of 2 s and a 4 s timeout); it commits nothing. The
	// cost: per member, 4/T transactions a second (T the session timeout:
	// 0.4 a second at the default 10 s) in place of as many syncs, each
	// logged and fsynced by every ZooKeeper server (about 85 bytes of log
	// each) and answered in about a millisecond more than a sync; and a
	// lease that runs out when the ensemble commits nothing for 0.3 to
	// 0.55 T (a leader election, a disk stalled on fsync). Without a grace
	// a disconnection revokes at once, which comes soon enough even from
	// a deposed leader (see docs/session.md).
	DisconnectGrace time.Duration
	// DepartureDelay keeps a departed member's seat for this long, so
	// that a planned restart moves nothing (after Kafka's static
	// membership): when a member's node goes (Close, or its session
	// expires), its partitions stay unassigned and nobody else's
	// assignment changes; if a member of the same name joins again within
	// the delay, it gets exactly the same partitions back. Once the delay
	// has run out the seat goes, and the others take the partitions over,
	// all at that one ZooKeeper event. The seat is a persistent node,
	// <group>/seats/<member>. Update.Members lists the live members only.
	// Members of a group should use the same delay: the seat goes when
	// the shortest has run out, and a member with none takes no account
	// of seats, so until then it waits for partitions the others keep
	// (never owned twice). Default 0: the others take over at once, and
	// no seat is kept.
	DepartureDelay time.Duration
	// Logger receives the allocator's logs; default slog.Default().
	Logger *slog.Logger
	// Metrics, if set, is called with counts of what happened (hand-offs,
	// strategy runs, reconnections; see [Event]), for an event sink of
	// your own. It is called from one goroutine of its own, never from
	// the allocator's loops: a slow Metrics delays nothing but its own
	// calls, whose Events then come coalesced. The last call is made
	// before Close returns. [Allocator.Stats] has the same counters and
	// the gauges; a metrics system that scrapes can read it instead, as
	// the Prometheus adapter (github.com/zkalloc/zkalloc/metrics/prometheus)
	// does: it does not need Metrics.
	Metrics func(Event)

	// Auth holds the identities given to ZooKeeper on every connection,
	// before any request of the allocator's, as ZooKeeper's addauth does:
	// for example {Scheme: "digest", Credentials: []byte("user:secret")}.
	// Default none. A server that refuses them (an unknown scheme) stops
	// the allocator with an error naming AuthFailed.
	Auth []Auth
	// ACL is given to every node the allocator creates: the group's nodes
	// and, when missing, the chroot, Root and Root/groups above them
	// (create those beforehand if groups with other credentials share
	// them). Default: with Auth, every permission for the identities of
	// Auth (zk.AuthACL(zk.PermAll), scheme "auth") and read for everyone,
	// so that status tools can look; without Auth, every permission for
	// everyone (zk.WorldACL(zk.PermAll)). Between them, the entries must
	// grant read, write, create and delete. A request that an ACL refuses
	// (NoAuth) stops the allocator with an error wrapping [ErrNoAuth] that
	// names the path; it is not retried.
	ACL []zk.ACL

	// chroot is the chroot path the Servers carry, "" if none; set by
	// withDefaults, which also strips it from Servers.
	chroot string

	// backend, set by withDefaults when Servers names an in-memory
	// backend registered with package seam (zkalloctest's), builds the
	// actors in place of ZooKeeper's.
	backend seam.Backend
}

// Auth is one identity given to ZooKeeper; see [Config.Auth].
type Auth struct {
	Scheme      string // such as "digest"
	Credentials []byte // for digest, "user:password"
}

// withDefaults validates c and returns it with defaults filled in, and
// Partitions normalized. Servers that name an in-memory backend (see
// package seam) are not parsed: the backend is set instead.
func (c Config) withDefaults() (Config, error) {
	if b, ok := seam.Lookup(c.Servers); ok {
		c.backend = b
	} else {
		servers, chroot, err := parseServers(c.Servers)
		if err != nil {
			return c, err
		}
		c.Servers, c.chroot = servers, chroot
	}
	for _, f := range []struct{ name, v string }{{"Group", c.Group}, {"Member", c.Member}} {
		if err := validateName(f.v); err != nil {
			return c, fmt.Errorf("%w: %s %s: %w", ErrInvalidConfig, f.name, quoteShort(f.v), err)
		}
	}
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if err := zkpath.ValidateRoot(c.Root); err != nil {
		return c, fmt.Errorf("%w: Root %q: %w", ErrInvalidConfig, c.Root, err)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"SessionTimeout", &c.SessionTimeout, DefaultSessionTimeout},
		{"Settle", &c.Settle, 0},
		{"ReleaseTimeout", &c.ReleaseTimeout, DefaultReleaseTimeout},
		{"DisconnectGrace", &c.DisconnectGrace, 0},
		{"DepartureDelay", &c.DepartureDelay, 0},
	} {
		if *d.v < 0 {
			return c, fmt.Errorf("%w: %s %v: negative", ErrInvalidConfig, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if err := validateAuth(c.Auth); err != nil {
		return c, err
	}
	switch {
	case len(c.ACL) > 0:
	case len(c.Auth) > 0:
		c.ACL = append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...)
	default:
		c.ACL = zk.WorldACL(zk.PermAll)
	}
	if err := validateACL(c.ACL, len(c.Auth) > 0); err != nil {
		return c, err
	}
	if c.Strategy == nil {
		c.Strategy = rebalance.StickyStrategy
	}
	switch {
	case c.Weight < 0 || c.Weight > rebalance.MaxWeight:
		return c, fmt.Errorf("%w: Weight %d: want 1 to %d (0 means 1)", ErrInvalidConfig, c.Weight, rebalance.MaxWeight)
	case c.Weight == 0:
		c.Weight = 1
	}
	if c.Weight != 1 && c.Strategy != rebalance.StickyStrategy {
		return c, fmt.Errorf("%w: Weight %d: only the sticky strategy has weights, and Strategy is %s", ErrInvalidConfig, c.Weight, c.Strategy.Name())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	seed, err := partitions.Normalize(c.Partitions)
	if err != nil {
		return c, fmt.Errorf("%w: Partitions: %w", ErrInvalidConfig, err)
	}
	c.Partitions = seed
	return c, nil
}

// validateName checks a group or member name: a ZooKeeper node name of at
// most [rebalance.MaxNameLen] bytes. Every member reads every other's
// name in one reply, which a client refuses past its buffer: with names
// of hundreds of kilobytes, a few members would cut the whole group off.
func validateName(name string) error {
	if err := rebalance.ValidateName(name); err != nil {
		return err
	}
	if len(name) > rebalance.MaxNameLen {
		return fmt.Errorf("%d bytes, longer than the limit of %d", len(name), rebalance.MaxNameLen)
	}
	return nil
}

// quoteShort quotes s for an error message, cut to its first 64 bytes
// with the length said, so that a huge bad value does not flood the log.
func quoteShort(s string) string {
	const show = 64
	if len(s) <= show {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:show], len(s))
}

// validateAuth checks the identities of [Config.Auth].
func validateAuth(auth []Auth) error {
	for i, a := range auth {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: Auth[%d] (scheme %s): %s", ErrInvalidConfig, i, quoteShort(a.Scheme), fmt.Sprintf(format, args...))
		}
		switch {
		case a.Scheme == "":
			return bad("empty scheme")
		case strings.IndexFunc(a.Scheme, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
			return bad("the scheme has white space or characters outside printable ASCII")
		case a.Scheme == "world" || a.Scheme == "auth":
			return bad("%q is a scheme of ACLs, not of credentials", a.Scheme)
		case len(a.Credentials) == 0:
			return bad("empty credentials")
		case a.Scheme == "digest":
			if user, _, ok := strings.Cut(string(a.Credentials), ":"); !ok || user == "" {
				return bad("digest credentials are user:password")
			}
		}
	}
	return nil
}

// neededPerms are the permissions the allocator uses on its nodes.
const neededPerms = zk.PermRead | zk.PermWrite | zk.PermCreate | zk.PermDelete

// validateACL checks [Config.ACL]; authenticated says whether Config.Auth
// gives identities, which an entry of scheme "auth" needs.
func validateACL(acl []zk.ACL, authenticated bool) error {
	var all int32
	for i, e := range acl {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: ACL[%d] %s:%s: %s", ErrInvalidConfig, i, quoteShort(e.Scheme), quoteShort(e.ID), fmt.Sprintf(format, args...))
		}
		switch {
		case e.Perms <= 0 || e.Perms&^zk.PermAll != 0:
			return bad("permissions %#x: want a non-empty combination of zk.PermRead, PermWrite, PermCreate, PermDelete, PermAdmin", e.Perms)
		case e.Scheme == "":
			return bad("empty scheme")
		case e.Scheme == "world" && e.ID != "anyone":
			return bad(`scheme "world" has the one ID "anyone"`)
		case e.Scheme == "auth" && !authenticated:
			return bad(`scheme "auth" stands for the identities of Config.Auth, which is empty`)
		case e.Scheme == "digest" && !strings.Contains(e.ID, ":"):
			return bad("a digest ID is user:base64(sha1(user:password))")
		case e.Scheme != "world" && e.Scheme != "auth" && e.ID == "":
			return bad("empty ID")
		}
		all |= e.Perms
	}
	if len(acl) > 0 && all&neededPerms != neededPerms {
		return fmt.Errorf("%w: ACL: no entry grants %s, which the allocator needs", ErrInvalidConfig, permNames(neededPerms&^all))
	}
	return nil
}

// permNames names the permissions of perms, as ZooKeeper's shell does.
func permNames(perms int32) string {
	var names []string
	for _, p := range []struct {
		bit  int32
		name string
	}{{zk.PermRead, "read"}, {zk.PermWrite, "write"}, {zk.PermCreate, "create"}, {zk.PermDelete, "delete"}, {zk.PermAdmin, "admin"}} {
		if perms&p.bit != 0 {
			names = append(names, p.name)
		}
	}
	return strings.Join(names, ", ")
}
