package members

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/membership"
)

// Expire asks for the given seats to be deleted, each only at the version
// given, which the seat had while its member was away: a member that has
// joined again since has bumped it, and keeps its seat. It replaces the
// previous request and never blocks.
func (m *Actor) Expire(seats []membership.Seat) { m.expire.Set(slices.Clone(seats)) }

// ensureSeat creates this member's seat, or bumps its version if it
// exists, so that no departure timer started before this join can delete
// it (see [Actor.Expire]).
func (m *Actor) ensureSeat(conn zksession.Conn) error {
	p := m.cfg.Paths.Seat(m.cfg.Member)
	data := []byte(m.cfg.Member)
	_, err := conn.Set(p, data, -1)
	if !errors.Is(err, zk.ErrNoNode) {
		if err != nil {
			return fmt.Errorf("touch seat %s: %w", p, err)
		}
		return nil
	}
	for range 2 {
		_, err = conn.Create(p, data, 0, m.cfg.ACL)
		switch {
		case err == nil || errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := zkpath.Ensure(conn, m.cfg.Paths.Seats(), m.cfg.ACL...); err != nil {
				return fmt.Errorf("create %s: %w", m.cfg.Paths.Seats(), err)
			}
		default:
			return fmt.Errorf("create seat %s: %w", p, err)
		}
	}
	return fmt.Errorf("create seat %s: %w", p, err)
}

// seats turns a reading of the seats into the view's, reading the version
// of each seat whose member is not in members (sorted). A seat gone
// meanwhile is left out.
func seats(conn zksession.Conn, paths zkpath.Group, names, members []string) ([]membership.Seat, error) {
	slices.Sort(names)
	out := make([]membership.Seat, len(names))
	var away []int
	for i, n := range names {
		out[i] = membership.Seat{Name: n, Version: -1}
		if _, live := slices.BinarySearch(members, n); !live {
			away = append(away, i)
		}
	}
	gone := make([]bool, len(names))
	errs := make([]error, len(away))
	inflight.Do(len(away), func(k int) {
		i := away[k]
		ok, stat, err := conn.Exists(paths.Seat(names[i]))
		switch {
		case err != nil:
			errs[k] = err
		case !ok:
			gone[i] = true
		default:
			out[i].Version = stat.Version
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read seats: %w", err)
	}
	kept := out[:0]
	for i, s := range out {
		if !gone[i] {
			kept = append(kept, s)
		}
	}
	return kept, nil
}

// expireSeats deletes the seats asked for by [Actor.Expire], each at
// its version; one already gone or joined again (a newer version) is left.
// Never this member's own.
func (m *Actor) expireSeats(conn zksession.Conn) error {
	var left []membership.Seat
	var errs []error
	for _, s := range m.toExpire {
		if s.Name == m.cfg.Member {
			continue
		}
		err := conn.Delete(m.cfg.Paths.Seat(s.Name), s.Version)
		switch {
		case err == nil:
			m.cfg.Logger.Info("zkalloc: departed member's seat expired; its partitions go to the others", "departed", s.Name)
		case errors.Is(err, zk.ErrNoNode):
		case errors.Is(err, zk.ErrBadVersion):
			// It joined again since (or another seat of that name was
			// made): list again so that the version is read anew.
			m.needList = true
		default:
			left = append(left, s)
			errs = append(errs, err)
		}
	}
	m.toExpire = left
	if len(errs) > 0 {
		names := make([]string, len(left))
		for i, s := range left {
			names[i] = s.Name
		}
		return fmt.Errorf("delete seats %s: %w", strings.Join(names, ","), errors.Join(errs...))
	}
	return nil
}
