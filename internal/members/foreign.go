package members

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// checkBounds returns an error naming the bound if names, a list of
// members/ as read, is past one; adding says that one more name, of
// adding bytes, is about to join.
func checkBounds(names []string, adding int) error {
	n, size := len(names), 0
	for _, name := range names {
		size += len(name) + 4
	}
	if adding > 0 {
		n, size = n+1, size+adding+4
	}
	switch {
	case n > membership.MaxMembers:
		return fmt.Errorf("%d members, more than the limit of %d (MaxMembers)", n, membership.MaxMembers)
	case size > membership.MaxMembersBytes:
		return fmt.Errorf("%d members whose names take %d bytes, more than the limit of %d (MaxMembersBytes)", n, size, membership.MaxMembersBytes)
	}
	return nil
}

// short returns name, or its first 64 bytes and its length if it is
// longer, so that a huge foreign name does not flood the log.
func short(name string) string {
	const show = 64
	if len(name) <= show {
		return name
	}
	return fmt.Sprintf("%s...(%d bytes)", strings.ToValidUTF8(name[:show], ""), len(name))
}

// verdicts keeps which children of members/ were found to be members,
// and their weights. A node keeps its kind and its data for life (no
// member writes its node again: it makes a new one), so a name is looked
// at once, when it first appears in the list, and again only if it may
// have been deleted and created again unseen. The members node's Stat
// tells: its Cversion counts the creates and deletes of its children
// (see internal/claims' claims_proof.go), so a list whose Cversion grew
// by exactly the names that came and went since the last list had no
// change in between that it does not show; if it grew by more, a name
// may have gone and come back, perhaps as another kind of node or with
// another weight, and every name is looked at again. A new members node
// (another Czxid) is looked at afresh. That costs each member one read
// per other member that joins, not one per member on every change, but
// for lists it missed a change of.
type verdicts struct {
	of       map[string]verdict
	names    []string // the list they were made for
	czxid    int64    // the members node's Czxid at that list
	cversion int32    // and its Cversion
	warned   map[string]struct{}
}

// unseen reports whether names, a sorted list of members/ whose node's
// Stat is stat, may hide a change since the list the verdicts were made
// for: a child deleted and created again between the two. int32
// arithmetic wraps as the server's counter does; a counter that has
// stopped (past 2^31 creates, see claims_proof.go) makes every list look
// so, which costs reads, never a stale verdict.
func (v *verdicts) unseen(names []string, stat *zk.Stat) bool {
	if v.of == nil || stat.Czxid != v.czxid {
		return true
	}
	return stat.Cversion-v.cversion != int32(symmetricDifference(names, v.names))
}

// symmetricDifference counts the names in one of a and b, both sorted,
// but not in the other.
func symmetricDifference(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			n, i = n+1, i+1
		case a[i] > b[j]:
			n, j = n+1, j+1
		default:
			i, j = i+1, j+1
		}
	}
	return n + len(a) - i + len(b) - j
}

// verdict is what a child of members/ was found to be.
type verdict struct {
	member   bool
	weight   int  // its Info's, 1 to rebalance.MaxWeight; set for a member only
	balanced bool // its Info names the balanced strategy, and this member's sticky
}

// weightOf is the weight a member's node data gives: [membership.Info]'s
// effective weight, capped at [rebalance.MaxWeight]; 1 for data that is
// not an Info (a node written by something else, whose kind makes it a
// member all the same).
func weightOf(data []byte) int {
	i, _ := membership.ParseInfo(data) // the zero Info if not: weight 1
	return min(i.EffectiveWeight(), rebalance.MaxWeight)
}

// members returns the members among names, sorted children of members/
// read with the members node's stat, and their weights, parallel to them (nil if all are
// 1), reading the node of every name it has no verdict for, the requests
// pipelined: a Get, which costs the same request as the stat, and gives
// the weight. This member's own weight is its Config.Info's. Names that
// are not valid member names, or nodes that are not a live session's,
// are left out and logged once each with their path; a node gone
// meanwhile is left out, and whole is false: the list must be read again
// (its watch has fired), not published, or the view would lack a node
// the list at its pzxid holds. own, this member's name, is taken as a
// member: list checks it.
func (m *Actor) members(conn zksession.Conn, names []string, stat *zk.Stat) (out []string, weights []int, balanced []string, whole bool, err error) {
	v := &m.verdicts
	if v.warned == nil {
		v.warned = make(map[string]struct{})
	}
	if v.unseen(names, stat) {
		v.of = make(map[string]verdict, len(names))
	}
	var look []string
	for _, name := range names {
		if _, ok := v.of[name]; !ok && name != m.cfg.Member {
			look = append(look, name)
		}
	}
	stats := make([]*zk.Stat, len(look))
	data := make([][]byte, len(look))
	errs := make([]error, len(look))
	inflight.Do(len(look), func(i int) {
		if rebalance.ValidateName(look[i]) != nil || len(look[i]) > rebalance.MaxNameLen {
			return // stats[i] stays nil: not a member's name
		}
		data[i], stats[i], errs[i] = conn.Get(m.cfg.Paths.Member(look[i]))
	})
	whole = true
	for i, name := range look {
		switch {
		case errors.Is(errs[i], zk.ErrNoNode):
			whole = false
			continue // gone: no verdict, left out
		case errs[i] != nil:
			return nil, nil, nil, false, fmt.Errorf("read member node %s: %w", m.cfg.Paths.Member(name), errs[i])
		}
		if stats[i] != nil && membership.IsMember(stats[i].EphemeralOwner) {
			v.of[name] = verdict{member: true, weight: weightOf(data[i]), balanced: m.upgrading(data[i])}
			continue
		}
		v.of[name] = verdict{}
		if _, done := v.warned[name]; !done {
			v.warned[name] = struct{}{}
			why := "not a valid member name"
			if stats[i] != nil {
				why = fmt.Sprintf("not an ephemeral node (owner %#x), so no live member's", stats[i].EphemeralOwner)
			}
			m.cfg.Logger.Warn("zkalloc: ignoring a node under members/ that is not a member", "path", m.cfg.Paths.Member(short(name)), "why", why)
		}
	}
	own := verdict{member: true, weight: min(m.cfg.Info.EffectiveWeight(), rebalance.MaxWeight)}
	keep := make(map[string]verdict, len(names))
	out = make([]string, 0, len(names))
	weights = make([]int, 0, len(names))
	heavy := false // a weight other than 1
	for _, name := range names {
		vd, known := v.of[name]
		if name == m.cfg.Member {
			vd, known = own, true
		}
		if known {
			keep[name] = vd
		}
		if vd.member {
			out = append(out, name)
			weights = append(weights, vd.weight)
			heavy = heavy || vd.weight != 1
			if vd.balanced {
				balanced = append(balanced, name)
			}
		}
	}
	if !heavy {
		weights = nil // the views of groups without weights stay as they were
	}
	v.of, v.names, v.czxid, v.cversion = keep, names, stat.Czxid, stat.Cversion
	for name := range v.warned {
		if _, listed := keep[name]; !listed {
			delete(v.warned, name) // gone: a node of that name later is logged again
		}
	}
	return out, weights, balanced, whole, nil
}

// upgrading reports whether a member node's data names the balanced
// strategy while this member runs the sticky one: a group in a rolling
// upgrade from the old default to the new (see membership.View.Balanced).
func (m *Actor) upgrading(data []byte) bool {
	i, _ := membership.ParseInfo(data)
	return m.cfg.Info.Strategy == "sticky" && i.Strategy == "balanced"
}
