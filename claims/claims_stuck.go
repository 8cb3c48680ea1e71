package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// stuckMargin is added to the longest a hand-off can take before the
// actor logs who holds the claims it waits for.
const stuckMargin = 10 * time.Second

// stuckAfter is the longest a hand-off between members that agree can
// take, plus stuckMargin: the holder debounces (rebalance cuts a burst
// short at five times Settle), its consumer acks (within ReleaseTimeout),
// or its session expires. That is the timeout the server granted, not the
// one asked for: the server bounds it.
func (c *Claims) stuckAfter() time.Duration {
	if c.cfg.StuckAfter > 0 {
		return c.cfg.StuckAfter
	}
	return 5*c.cfg.Settle + c.cfg.ReleaseTimeout + c.loop.State().Timeout + stuckMargin
}

// armStuck sets the stuck timer to fire when the oldest holder not yet
// reported has held its claim for stuckAfter, and stops it if there is
// none.
func (c *Claims) armStuck() {
	var oldest time.Time
	for _, h := range c.holders {
		if !h.reported && (oldest.IsZero() || h.since.Before(oldest)) {
			oldest = h.since
		}
	}
	if oldest.IsZero() {
		c.stuck.Stop()
		return
	}
	c.stuck.Reset(max(oldest.Add(c.stuckAfter()).Sub(c.cfg.Clock.Now()), 0))
}

// reportStuck logs, once for each holding session, the wanted claims
// another session has held for stuckAfter or more.
//
// Members that compute the same assignment hand a claim over within
// ReleaseTimeout of seeing the change, or within a session timeout when
// the holder is cut off, so a claim held longer means they do not agree.
// Each then waits for the other's claims for ever, and their consumers
// are silently never given those partitions. The cause is members of one
// group that run different strategies and got past the check at their
// start (they started at the same moment, or one is of an older version
// whose node names no strategy), versions that compute differently under
// one strategy name, or a process that is not a member of the group
// holding claims under its owners. The log names the holder and,
// from its member node, its strategy and version: an error when the
// strategy differs from this member's, a warning otherwise.
func (c *Claims) reportStuck() {
	st := c.loop.State()
	if st.Status != session.Up || c.dirty && !c.failing {
		// An attempt is due (the wanted set may have changed since the
		// holders were recorded); once it is made it arms the timer again.
		// Not while attempts fail, though: a claim that keeps failing
		// keeps one due, and the holders the attempt recorded stand.
		return
	}
	wanted := make(map[partitions.Partition]bool, len(c.desired.Want))
	if c.desired.SessionID == st.SessionID {
		for _, p := range c.desired.Want {
			wanted[p] = true
		}
	}
	now := c.cfg.Clock.Now()
	bySession := make(map[int64][]partitions.Partition)
	for p, h := range c.holders {
		if wanted[p] && !h.reported && now.Sub(h.since) >= c.stuckAfter() {
			bySession[h.session] = append(bySession[h.session], p)
		}
	}
	for _, sess := range slices.Sorted(maps.Keys(bySession)) {
		ps := bySession[sess]
		partitions.Sort(ps)
		since := now
		for _, p := range ps {
			h := c.holders[p]
			if h.since.Before(since) {
				since = h.since
			}
			h.reported = true
			c.holders[p] = h
		}
		c.logStuck(sess, ps, now.Sub(since))
	}
	c.armStuck()
}

// logStuck reads who holds ps's claims (the claim's data is its owner's
// member name) and that member's node, and logs what it found.
func (c *Claims) logStuck(sess int64, ps []partitions.Partition, heldFor time.Duration) {
	conn := c.loop.State().Conn
	attrs := []any{
		"claims", len(ps),
		"first", ps[0].String(),
		"held_for", heldFor.Round(time.Second).String(),
		"holder_session", fmt.Sprintf("%#x", sess),
		"strategy", c.cfg.Strategy,
		"version", membership.Version(),
	}
	level := slog.LevelWarn
	msg := "zkalloc: claims wanted here have been held by another member for longer than a hand-off takes; members of a group must run the same Strategy and zkalloc version (or the holder has a longer ReleaseTimeout)"
	name, _, err := conn.Get(c.path(ps[0]))
	if err != nil {
		attrs = append(attrs, "holder", "unknown: "+err.Error())
		c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
		return
	}
	// The claim's data is whatever its creator wrote: a process that is no
	// member may have written anything. Name a member's node only with a
	// valid name, and log no more than the start of anything else.
	if err := zkpath.ValidateName(string(name)); err != nil {
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
			msg = "zkalloc: claims wanted here are held by a member that runs another strategy; every member of a group must use the same Strategy, or some partitions are never consumed"
		}
	}
	c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
}
