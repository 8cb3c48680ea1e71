package decision

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/membership"
)

// Seats (Config.DepartureDelay), after Kafka's static membership and
// Helix's delayed rebalancer: a member's seat node outlives its session,
// and the assignment is computed over the live members and the seats, so
// that a member that leaves leaves its share unclaimed (paused) and
// nobody else's changes; if it joins again under the same name, the same
// list gives it the same share. Each member times a seat from when it
// first sees it without its member; the first whose timer runs out
// deletes it (at the version it saw, see [members.Actor.Expire]),
// and every member recomputes on that one ZooKeeper event.
//
// Members with different delays agree once the shortest has run out: the
// seat goes at the first deletion. A member with no delay ignores seats:
// until the seat goes, it and the others compute different assignments,
// and the claims keep that safe (no partition is owned twice; the ones
// they disagree on wait, at most until a member with a delay deletes the
// seat).

// seats holds the departure timers.
type seats struct {
	away map[string]awaySeat // seats without a live member
}

// awaySeat is a seat without a live member: since when it has been seen
// so, at the version it had, and whether its expiry has been asked for.
type awaySeat struct {
	version int32
	since   time.Time
	asked   bool
}

// seatsSeen updates the departure timers from the member view just taken.
func (c *Core) seatsSeen() {
	if c.cfg.DepartureDelay <= 0 {
		return
	}
	s := &c.seats
	away := c.members.Away()
	next := make(map[string]awaySeat, len(away))
	for _, seat := range away {
		if seat.Name == c.cfg.Member {
			continue // our own: we are joining
		}
		if a, ok := s.away[seat.Name]; ok && a.version == seat.Version {
			next[seat.Name] = a
			continue
		}
		next[seat.Name] = awaySeat{version: seat.Version, since: c.now}
		c.log(slog.LevelInfo, "zkalloc: member departed; its seat and partitions are kept for DepartureDelay", "departed", seat.Name, "delay", c.cfg.DepartureDelay)
	}
	for name := range s.away {
		if _, ok := next[name]; ok {
			continue
		}
		if _, live := slices.BinarySearch(c.members.Members, name); live {
			c.log(slog.LevelInfo, "zkalloc: departed member is back in its seat", "member", name)
		}
	}
	s.away = next
}

// seatsDue asks for the seats whose delay has run out to be deleted, if
// any has not been asked for yet.
func (c *Core) seatsDue() {
	s := &c.seats
	var due []membership.Seat
	fresh := false
	for name, a := range s.away {
		if c.now.Before(a.since.Add(c.cfg.DepartureDelay)) {
			continue
		}
		due = append(due, membership.Seat{Name: name, Version: a.version})
		if !a.asked {
			fresh = true
			a.asked = true
			s.away[name] = a
			c.log(slog.LevelInfo, "zkalloc: DepartureDelay ran out; deleting the departed member's seat", "departed", name, "away", c.now.Sub(a.since))
		}
	}
	if !fresh {
		return
	}
	slices.SortFunc(due, func(a, b membership.Seat) int { return strings.Compare(a.Name, b.Name) })
	c.ready.Expire = due
}

// seatWake returns when the next seat not asked for yet runs out; zero if
// none.
func (c *Core) seatWake() time.Time {
	var at time.Time
	for _, a := range c.seats.away {
		if a.asked {
			continue
		}
		if t := a.since.Add(c.cfg.DepartureDelay); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// seated returns the list to compute the assignment over: the live
// members and, with DepartureDelay, the seats.
func (c *Core) seated() []string {
	if c.cfg.DepartureDelay <= 0 {
		return c.members.Members
	}
	return c.members.Seated()
}
