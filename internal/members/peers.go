package members

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
)

// peersChecked is how many other members' nodes the check before the
// first registration reads: a newcomer that disagrees with its group
// disagrees with any of them, and a few keep a join in a large group to
// one more round trip.
const peersChecked = 3

// checkPeers reads the nodes of the first few other members of the group
// and returns an error wrapping [membership.ErrStrategyMismatch] if one of
// them names another strategy than ours. Nodes without a strategy (older versions)
// and nodes gone meanwhile pass.
func (m *Actor) checkPeers(conn zksession.Conn) error {
	names, _, err := conn.Children(m.cfg.Paths.Members())
	if errors.Is(err, zk.ErrNoNode) {
		return nil // the first member of the group
	}
	if err != nil {
		return fmt.Errorf("list members %s: %w", m.cfg.Paths.Members(), err)
	}
	if !slices.Contains(names, m.cfg.Member) {
		if err := checkBounds(names, len(m.cfg.Member)); err != nil {
			return fmt.Errorf("%w: %s cannot join: %w", membership.ErrGroupFull, m.cfg.Paths.Members(), err)
		}
	}
	slices.Sort(names)
	names = slices.DeleteFunc(names, func(n string) bool { return n == m.cfg.Member })
	names = names[:min(len(names), peersChecked)]
	data := make([][]byte, len(names))
	errs := make([]error, len(names))
	inflight.Do(len(names), func(i int) { data[i], _, errs[i] = conn.Get(m.cfg.Paths.Member(names[i])) })
	for i, name := range names {
		switch {
		case errors.Is(errs[i], zk.ErrNoNode):
			continue
		case errs[i] != nil:
			return fmt.Errorf("read member %s: %w", name, errs[i])
		}
		peer, ok := membership.ParseInfo(data[i])
		if !ok && len(data[i]) > 0 {
			m.cfg.Logger.Warn("zkalloc: a member node's data is not a member's; not checking its strategy",
				"path", m.cfg.Paths.Member(short(name)), "data", describe(data[i]))
		}
		if ok && m.cfg.Info.Strategy == "sticky" && peer.Strategy == "balanced" {
			// A rolling upgrade from the old default: this member
			// computes Balanced's assignment until no member runs it
			// (membership.View.Balanced).
			m.cfg.Logger.Info("zkalloc: joining a group whose members run balanced; computing its assignment until every member runs sticky", "member", name)
			continue
		}
		if ok && peer.Strategy != "" && peer.Strategy != m.cfg.Info.Strategy {
			hint := ""
			if m.cfg.Info.Strategy == "sticky" {
				hint = "; the default strategy is now sticky: to keep the group on " + peer.Strategy + ", set Config.Strategy to it"
			}
			return fmt.Errorf("%w: member %q runs strategy %q (%s), this one %q; every member of a group must use the same strategy (if %q has stopped, its node goes within its session timeout)%s",
				membership.ErrStrategyMismatch, name, peer.Strategy, describe(data[i]), m.cfg.Info.Strategy, name, hint)
		}
	}
	return nil
}
