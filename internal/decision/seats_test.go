package decision

import (
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

const delay = 10 * time.Second

// seatView is a member view with seats: live members, then every seat
// (version -1 for those of live members, as membership reads them).
func seatView(zxid int64, live []string, away map[string]int32, seated ...string) membership.View {
	v := view(1, 1, zxid, live...)
	for _, n := range seated {
		ver, ok := away[n]
		if !ok {
			ver = -1
		}
		v.Seats = append(v.Seats, membership.Seat{Name: n, Version: ver})
	}
	return v
}

// share is member's share of t:0..8 over members by RoundRobin.
func share(t *testing.T, member string, members ...string) []rebalance.Partition {
	t.Helper()
	all := parts(1, 1, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8).Partitions
	out, err := rebalance.Compute(rebalance.RoundRobin, members, all)
	if err != nil {
		t.Fatal(err)
	}
	return out[member]
}

// seatedCore brings member to its first assignment of t:0..8 with a, b and c
// live and seated, with DepartureDelay delay.
func seatedCore(t *testing.T, member string) (*core, Update) {
	t.Helper()
	h := newCore(t, member, rebalance.RoundRobin, coreOptions{departureDelay: delay})
	h.up(1, 1)
	h.members(seatView(2, []string{"a", "b", "c"}, nil, "a", "b", "c"))
	h.parts(parts(1, 1, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8))
	u := h.next()
	if want := share(t, member, "a", "b", "c"); !eq(u.Assigned, want) {
		t.Fatalf("first Assigned %v, want %v", u.Assigned, want)
	}
	h.desired = nil // granted already
	return h, u
}

func TestSeatKeptPausesShareThenExpires(t *testing.T) {
	t.Parallel()
	h, first := seatedCore(t, "a")

	// c leaves: its seat stays, so a's share is the same, and c's is
	// claimed by nobody.
	h.members(seatView(4, []string{"a", "b"}, map[string]int32{"c": 2}, "a", "b", "c"))
	u := h.next()
	if !eq(u.Assigned, first.Assigned) || len(u.Added)+len(u.Revoked)+len(u.Pending) != 0 {
		t.Fatalf("after c left: %+v, want Assigned %v unchanged", u, first.Assigned)
	}
	if !slices.Equal(u.Members, []string{"a", "b"}) {
		t.Errorf("Members %v, want the live ones [a b]", u.Members)
	}
	h.noDesired("while c's seat is kept")
	if want := t0.Add(delay); !h.wake.Equal(want) {
		t.Errorf("wake %v, want the end of the delay %v", h.wake, want)
	}

	h.advance(delay - time.Millisecond)
	if h.expire != nil {
		t.Fatalf("seat expiry asked for %v before the delay ran out", h.expire)
	}
	h.advance(time.Millisecond)
	if want := []membership.Seat{{Name: "c", Version: 2}}; !slices.Equal(h.expire, want) {
		t.Fatalf("at the end of the delay: Expire %v, want %v", h.expire, want)
	}
	h.expire = nil
	h.none()
	h.noDesired("before the seat is gone")
	h.advance(delay)
	if h.expire != nil {
		t.Errorf("seat expiry asked for again: %v", h.expire)
	}

	// The seat is deleted: a and b take c's share over.
	h.members(seatView(5, []string{"a", "b"}, nil, "a", "b"))
	u = h.next()
	if want := share(t, "a", "a", "b"); !eq(u.Assigned, want) || len(u.Added) == 0 {
		t.Fatalf("after the seat went: %+v, want Assigned %v", u, want)
	}
}

func TestSeatRejoinGetsSameShare(t *testing.T) {
	t.Parallel()
	_, before := seatedCore(t, "c")

	// c restarts while a is away: computed over the seats, its share is
	// the one it had.
	h := newCore(t, "c", rebalance.RoundRobin, coreOptions{departureDelay: delay})
	h.up(1, 1)
	h.members(seatView(6, []string{"b", "c"}, map[string]int32{"a": 1}, "a", "b", "c"))
	h.parts(parts(1, 1, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8))
	if u := h.next(); !eq(u.Assigned, before.Assigned) {
		t.Fatalf("rejoined: Assigned %v, want %v", u.Assigned, before.Assigned)
	}

	// From a's side: c leaves and comes back within the delay; nothing
	// changes and the timer is off.
	a, first := seatedCore(t, "a")
	a.members(seatView(4, []string{"a", "b"}, map[string]int32{"c": 0}, "a", "b", "c"))
	a.next()
	a.advance(delay / 2)
	a.members(seatView(7, []string{"a", "b", "c"}, nil, "a", "b", "c"))
	if u := a.next(); !eq(u.Assigned, first.Assigned) || len(u.Added)+len(u.Revoked) != 0 {
		t.Fatalf("c back: %+v, want Assigned %v unchanged", u, first.Assigned)
	}
	a.noDesired("when c came back")
	a.advance(delay)
	if a.expire != nil {
		t.Errorf("seat expiry asked for a member that came back: %v", a.expire)
	}
}

func TestSeatTimerRestartsOnNewVersion(t *testing.T) {
	t.Parallel()
	h, _ := seatedCore(t, "a")
	h.members(seatView(4, []string{"a", "b"}, map[string]int32{"c": 2}, "a", "b", "c"))
	h.advance(delay / 2)
	// c joined and left again between two readings: its seat's version
	// moved, and the delay starts again.
	h.members(seatView(8, []string{"a", "b"}, map[string]int32{"c": 3}, "a", "b", "c"))
	h.advance(delay / 2)
	if h.expire != nil {
		t.Fatalf("expired %v a delay after the first departure, not the second", h.expire)
	}
	h.advance(delay / 2)
	if want := []membership.Seat{{Name: "c", Version: 3}}; !slices.Equal(h.expire, want) {
		t.Fatalf("Expire %v, want %v", h.expire, want)
	}
}

func TestSeatOwnNeverExpired(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{departureDelay: delay})
	h.up(1, 1)
	// Our own seat, before our member node is seen.
	h.members(seatView(2, []string{"b"}, map[string]int32{"a": 0}, "a", "b"))
	h.advance(2 * delay)
	if h.expire != nil {
		t.Errorf("asked to expire %v, our own seat", h.expire)
	}
}

func TestSeatsIgnoredWithoutDelay(t *testing.T) {
	t.Parallel()
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{})
	h.up(1, 1)
	h.members(seatView(4, []string{"a", "b"}, map[string]int32{"c": 2}, "a", "b", "c"))
	h.parts(parts(1, 1, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8))
	if u, want := h.next(), share(t, "a", "a", "b"); !eq(u.Assigned, want) {
		t.Errorf("Assigned %v, want %v over the live members only", u.Assigned, want)
	}
	h.advance(2 * delay)
	if h.expire != nil {
		t.Errorf("asked to expire %v without a delay", h.expire)
	}
}
