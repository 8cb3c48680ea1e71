package members_test

import (
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

func withSeats(c *members.Config) { c.Seats = true }

// seated is the condition "the view lists members live and exactly
// seats, those without a live member at a version read".
func seated(live []string, seats ...string) (string, func(membership.View) bool) {
	return "with seats", func(v membership.View) bool {
		if !slices.Equal(v.Members, live) || len(v.Seats) != len(seats) {
			return false
		}
		for i, s := range v.Seats {
			_, isLive := slices.BinarySearch(live, s.Name)
			if s.Name != seats[i] || isLive != (s.Version == -1) {
				return false
			}
		}
		return true
	}
}

func TestMembershipSeats(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	m1 := startMemberWrapped(t, servers, "m1", membership.Info{}, 4*time.Second, nil, withSeats)
	m2 := startMemberWrapped(t, servers, "m2", membership.Info{}, 4*time.Second, nil, withSeats)
	m1.waitView(seated([]string{"m1", "m2"}, "m1", "m2"))
	data, stat, err := obs.Conn.Get(paths.Seat("m2"))
	if err != nil || stat.EphemeralOwner != 0 || string(data) != "m2" {
		t.Fatalf("seat of m2: %q, %+v, %v; want a persistent node naming it", data, stat, err)
	}

	// m2 leaves: its seat stays, read at its version.
	m2.run.Stop()
	v := m1.waitView(seated([]string{"m1"}, "m1", "m2"))
	if v.Seats[1].Version != stat.Version {
		t.Fatalf("away seat %+v, want version %d", v.Seats[1], stat.Version)
	}
	if _, s, err := obs.Conn.Get(paths.Seats()); err != nil || v.Zxid < s.Pzxid {
		t.Errorf("view zxid %d, want at least the seats' pzxid (%+v, %v)", v.Zxid, s, err)
	}

	// m2 comes back and leaves again: its seat's version moved, so an
	// expiry at the old one leaves it. x's seat, asked in the same
	// request, goes.
	m2 = startMemberWrapped(t, servers, "m2", membership.Info{}, 4*time.Second, nil, withSeats)
	m2.waitView(seated([]string{"m1", "m2"}, "m1", "m2"))
	m2.run.Stop()
	if _, err := obs.Conn.Create(paths.Seat("x"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	v = m1.waitView(seated([]string{"m1"}, "m1", "m2", "x"))
	if v.Seats[1].Version == stat.Version {
		t.Fatalf("seat of m2 at version %d after it joined again; want it bumped", stat.Version)
	}
	m1.m.Expire([]membership.Seat{{Name: "m2", Version: stat.Version}, v.Seats[2], {Name: "m1", Version: 0}})
	m1.waitView(seated([]string{"m1"}, "m1", "m2"))
	for _, name := range []string{"m1", "m2"} {
		if ok, _, err := obs.Conn.Exists(paths.Seat(name)); !ok || err != nil {
			t.Errorf("seat of %s gone (%v): deleted at an old version, or our own", name, err)
		}
	}

	// At the version read while it is away, it goes.
	m1.m.Expire([]membership.Seat{v.Seats[1]})
	v = m1.waitView(seated([]string{"m1"}, "m1"))

	// Our own seat deleted behind our back is made again.
	if err := obs.Conn.Delete(paths.Seat("m1"), -1); err != nil {
		t.Fatal(err)
	}
	what, ok := seated([]string{"m1"}, "m1")
	m1.waitView(what+" again", func(w membership.View) bool { return w.Zxid > v.Zxid && ok(w) })
	if _, stat, err := obs.Conn.Get(paths.Seat("m1")); err != nil || stat.Czxid <= v.Zxid {
		t.Errorf("own seat %+v, %v; want it made again", stat, err)
	}
}

func TestMembershipNoSeatsByDefault(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait)
	m := startMember(t, servers, "m", membership.Info{}, 4*time.Second)
	if v := m.waitView(listing("m")); v.Seats != nil {
		t.Errorf("seats %v without Config.Seats", v.Seats)
	}
	if ok, _, err := obs.Conn.Exists(paths.Seats()); ok || err != nil {
		t.Errorf("seats node exists (%v) without Config.Seats", err)
	}
}
