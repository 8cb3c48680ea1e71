package members_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestMembershipIgnoresGhosts puts nodes under members/ that are not
// members: a persistent node and one whose name is too long for a member.
// Views never list them, each is logged once with its path however often
// the list is read, and a live member that comes and goes is listed.
func TestMembershipIgnoresGhosts(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	if err := zkpath.Ensure(obs, paths.Members()); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("l", rebalance.MaxNameLen+1)
	for _, name := range []string{"ghost", long} {
		if _, err := obs.Create(paths.Member(name), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	logs := actortest.NewLogs()
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, nil, func(c *members.Config) {
		c.Logger = slog.New(logs)
	})
	m.waitView(listing("m"))
	for range 2 { // the list read again and again
		if _, err := obs.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		m.waitView(listing("m", "x"))
		if err := obs.Delete(paths.Member("x"), -1); err != nil {
			t.Fatal(err)
		}
		m.waitView(listing("m"))
	}
	var ghosts []string
	for logs.Count() > 0 && len(ghosts) < logs.Count() {
		r := logs.Next(t, time.Second)
		if !strings.Contains(r.Msg, "not a member") {
			t.Errorf("unexpected log %q %v", r.Msg, r.Attrs)
			continue
		}
		ghosts = append(ghosts, r.Attrs["path"])
	}
	slices.Sort(ghosts)
	if want := []string{paths.Member("ghost"), paths.Member(long[:64] + "...(250 bytes)")}; !slices.Equal(ghosts, want) {
		t.Errorf("logged ghosts %q; want each of %q once", ghosts, want)
	}
}

// TestMembershipBoundsTheList fills members/ past MaxMembersBytes with
// long names: a member already in the group refuses the list, logging an
// error that names the limit, and publishes no view until the list is
// back within it; a newcomer refuses to join with ErrGroupFull naming it.
func TestMembershipBoundsTheList(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	logs := actortest.NewLogs()
	m := startMemberWrapped(t, servers, "m", membership.Info{}, 4*time.Second, nil, func(c *members.Config) {
		c.Logger = slog.New(logs)
	})
	before := m.waitView(listing("m"))

	// Names of 20,000 bytes: 50 of them pass the limit of 1,000,000.
	const nameLen, n = 20_000, 50
	ops := make([]any, n)
	for i := range ops {
		name := fmt.Sprintf("%05d", i) + strings.Repeat("x", nameLen-5)
		ops[i] = &zk.CreateRequest{Path: paths.Member(name), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeral}
	}
	for i := 0; i < n; i += 10 { // a multi stays under the server's request limit
		if _, err := obs.Multi(ops[i : i+10]...); err != nil {
			t.Fatal(err)
		}
	}
	r := logs.Next(t, wait)
	for r.Level < slog.LevelError { // the long names are logged as ghosts meanwhile
		r = logs.Next(t, wait)
	}
	if r.Level != slog.LevelError || !strings.Contains(r.Attrs["err"], "MaxMembersBytes") || !strings.Contains(r.Attrs["err"], fmt.Sprint(membership.MaxMembersBytes)) {
		t.Errorf("log %v %q %v; want an error naming MaxMembersBytes and its value", r.Level, r.Msg, r.Attrs)
	}
	late := startMember(t, servers, "late", membership.Info{Strategy: "s"}, 4*time.Second)
	late.run.MayFail()
	select {
	case <-late.run.Done():
	case <-time.After(wait):
		t.Fatal("a newcomer joined a full group")
	}
	if err := late.run.Err(); !errors.Is(err, membership.ErrGroupFull) || !strings.Contains(err.Error(), "MaxMembersBytes") {
		t.Errorf("newcomer's Run = %v; want ErrGroupFull naming MaxMembersBytes", err)
	}

	// A member joins while the list is past the limit: refused again, no
	// view lists it, until the list is back within the limit.
	if _, err := obs.Create(paths.Member("x"), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for r = logs.Next(t, wait); r.Level < slog.LevelError; r = logs.Next(t, wait) {
	}
	if !strings.Contains(r.Attrs["err"], "52 members") {
		t.Errorf("second refusal %q; want it to count 52 members", r.Attrs["err"])
	}
	// One name fewer is back within the limit: 49 of 20,004 bytes and two
	// short ones. (Deleting five, one by one, let a view of the list after
	// the first pass, and the test took the last for the limit.)
	if err := obs.Delete(ops[0].(*zk.CreateRequest).Path, -1); err != nil {
		t.Fatal(err)
	}
	back := pzxid(t, obs)
	what, listed := listing("m", "x")
	v := m.waitView(what, listed)
	if v.Zxid < back {
		t.Errorf("x listed in a view of zxid %d, before the list was back within the limit at %d", v.Zxid, back)
	}
	if v.Zxid <= before.Zxid {
		t.Errorf("view zxid %d not after the first %d", v.Zxid, before.Zxid)
	}
}

// TestMembershipJoinsPastUnreadableData: a live member node whose data is
// not a member's (written by another program, here 2,000 bytes that are
// not JSON) is no reason to refuse to join: the newcomer logs it once,
// cut short, and joins; the node counts as a member, being a live
// session's.
func TestMembershipJoinsPastUnreadableData(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, wait).Conn
	if err := zkpath.Ensure(obs, paths.Members()); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Member("odd"), []byte(strings.Repeat("?", 2000)), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	logs := actortest.NewLogs()
	m := startMemberWrapped(t, servers, "m", membership.Info{Strategy: "balanced"}, 4*time.Second, nil, func(c *members.Config) {
		c.Logger = slog.New(logs)
	})
	m.waitView(listing("m", "odd"))
	r := logs.Next(t, wait)
	if !strings.Contains(r.Msg, "not a member's") || r.Attrs["path"] != paths.Member("odd") || !strings.Contains(r.Attrs["data"], "(2000 bytes)") {
		t.Errorf("log %q %v; want the node's path and its data cut short", r.Msg, r.Attrs)
	}
	if n := logs.Count(); n != 1 {
		t.Errorf("%d logs; want 1", n)
	}
}
