package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// holderName returns, for a log, the member name of session's claim on
// p: the claim's data while session holds it, or else its hold record's
// member while the record names session; "unknown" if neither does (the
// claim has passed on or gone, or another program wrote it). It costs up
// to two reads: for logs of things gone wrong, or at debug level.
func (c *Actor) holderName(conn zksession.Conn, p rebalance.Partition, session int64) string {
	if data, stat, err := conn.Get(c.path(p)); err == nil && stat.EphemeralOwner == session && rebalance.ValidateName(string(data)) == nil {
		return string(data)
	}
	if data, _, err := conn.Get(c.record(p)); err == nil {
		if sid, member, ok := parseHold(data); ok && sid == session {
			return member
		}
	}
	return "unknown"
}

// armStuck sets the stuck timer for when the next warning is due, and
// stops it if none is (see [waits.wake]).
func (c *Actor) armStuck() {
	at := c.holders.wake()
	if at.Equal(c.stuckAt) {
		return
	}
	c.stuckAt = at
	if at.IsZero() {
		c.stuckTimer.Stop()
		return
	}
	c.stuckTimer.Reset(max(at.Sub(c.cfg.Clock.Now()), 0))
}

// warnStuck warns of the claims stuck by now, once for each holding
// session.
func (c *Actor) warnStuck() {
	for _, s := range c.holders.due(c.cfg.Clock.Now(), c.wanted) {
		c.logStuck(s)
	}
}

// wanted reports whether the newest Want of the current session wants p.
func (c *Actor) wanted(p rebalance.Partition) bool {
	if c.desired.SessionID != c.loop.State().SessionID {
		return false
	}
	_, ok := slices.BinarySearchFunc(c.desired.Partitions, p, rebalance.Compare)
	return ok
}

// logStuck reads who holds s's claims (the claim's data is its owner's
// member name; without the claim, its hold record names it) and that
// member's node, and warns of them with what it found.
//
// A claim held for longer than a hand-off can take means the members do
// not agree (see stuck.go). The cause is members of one group that run
// different strategies and got past the check at their start (they
// started at the same moment, or one is of an older version whose node
// names no strategy), versions that compute differently under one
// strategy name, a holder with a longer Settle or ReleaseTimeout, or a
// process that is not a member of the group holding claims under its
// owners. The record names the partitions (the first few, and how many),
// how long they have been held, the holder and, from its member node,
// its strategy and version, and what to do: an error when the strategy
// differs from this member's, a warning otherwise.
func (c *Actor) logStuck(s stuck) {
	if len(s.partitions) == 0 {
		return
	}
	ps := s.partitions
	conn := c.loop.State().Conn
	attrs := []any{
		"partitions", named(ps),
		"count", len(ps),
		"held_for", s.heldFor.Round(time.Second).String(),
		"holder_session", fmt.Sprintf("%#x", s.session),
		"strategy", c.cfg.Strategy,
		"version", membership.Version(),
	}
	level := slog.LevelWarn
	msg := "zkalloc: claims wanted here have been held by another member for longer than a hand-off takes; members of a group must run the same Strategy and zkalloc version (or the holder has a longer Settle or ReleaseTimeout), or some partitions are never consumed: restart the holder with the group's configuration, or stop it if it is no member of the group"
	name, _, err := conn.Get(c.path(ps[0]))
	if errors.Is(err, zk.ErrNoNode) {
		// The claim is gone, its hold record stands (see holds.go): the
		// record names the holder.
		var data []byte
		if data, _, err = conn.Get(c.record(ps[0])); err == nil {
			name = data
			if _, member, ok := parseHold(data); ok {
				name = []byte(member)
			}
		}
	}
	if err != nil {
		attrs = append(attrs, "holder", "unknown: "+err.Error())
		c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
		return
	}
	// The claim's data is whatever its creator wrote: a process that is no
	// member may have written anything. Name a member's node only with a
	// valid name, and log no more than the start of anything else.
	if err := rebalance.ValidateName(string(name)); err != nil {
		if len(name) > 64 {
			name = append(name[:64:64], "..."...)
		}
		attrs = append(attrs, "holder", fmt.Sprintf("not a member name: %q", name))
		c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
		return
	}
	attrs = append(attrs, "holder", string(name))
	data, _, err := conn.Get(c.cfg.Paths.Member(string(name)))
	info, ok := membership.ParseInfo(data)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		attrs = append(attrs, "holder_member", "none: not a live member of the group")
	case err != nil:
		attrs = append(attrs, "holder_member", "unknown: "+err.Error())
	case !ok:
		attrs = append(attrs, "holder_member", "unreadable: "+string(data))
	default:
		attrs = append(attrs, "holder_strategy", cmp.Or(info.Strategy, "unknown"), "holder_version", info.Version)
		if info.Strategy != "" && info.Strategy != c.cfg.Strategy {
			level = slog.LevelError
			msg = "zkalloc: claims wanted here are held by a member that runs another strategy; every member of a group must use the same Strategy, or some partitions are never consumed: restart the holder with the group's Strategy"
		}
	}
	c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
}
