package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// logStuck reads who holds s's claims (the claim's data is its owner's
// member name; without the claim, its hold record names it) and that
// member's node, and logs what it found.
//
// Members that compute the same assignment hand a claim over within
// ReleaseTimeout of seeing the change, or within a session timeout when
// the holder is cut off, so a claim held longer (the member's core
// decides when, and asks once per holding session) means they do not
// agree. Each then waits for the other's claims for ever, and their
// consumers are silently never given those partitions. The cause is
// members of one group that run different strategies and got past the
// check at their start (they started at the same moment, or one is of an
// older version whose node names no strategy), versions that compute
// differently under one strategy name, or a process that is not a member
// of the group holding claims under its owners. The log names the holder
// and, from its member node, its strategy and version: an error when the
// strategy differs from this member's, a warning otherwise.
func (c *Actor) logStuck(s decision.Stuck) {
	if len(s.Partitions) == 0 {
		return
	}
	ps := s.Partitions
	conn := c.loop.State().Conn
	attrs := []any{
		"claims", len(ps),
		"first", ps[0].String(),
		"held_for", s.HeldFor.Round(time.Second).String(),
		"holder_session", fmt.Sprintf("%#x", s.Session),
		"strategy", c.cfg.Strategy,
		"version", membership.Version(),
	}
	level := slog.LevelWarn
	msg := "zkalloc: claims wanted here have been held by another member for longer than a hand-off takes; members of a group must run the same Strategy and zkalloc version (or the holder has a longer ReleaseTimeout)"
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
			msg = "zkalloc: claims wanted here are held by a member that runs another strategy; every member of a group must use the same Strategy, or some partitions are never consumed"
		}
	}
	c.cfg.Logger.Log(context.Background(), level, msg, attrs...)
}
