package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

// drainGroup is a group made by hand for the drain tests: its partitions
// (events:0-29), live members as member nodes with the Info given, each
// in a session of its own, seats, and an assignment record's head with
// its share nodes, computed by the sticky function for the members given.
type drainGroup struct {
	t     *testing.T
	addr  string
	paths zkpath.Group
	conn  *zk.Conn // the test's own session, for reads
}

func newDrainGroup(t *testing.T, srv interface{ Addr() string }, group string) *drainGroup {
	t.Helper()
	if code, _, errOut := cli(t, context.Background(), "-servers", srv.Addr(), "-group", group, "partitions", "add", "-create", "events:0-29"); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	conn, _, err := zk.Connect([]string{srv.Addr()}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return &drainGroup{t: t, addr: srv.Addr(), paths: zkpath.Group{Root: "/zkalloc", Group: group}, conn: conn}
}

// run runs the command on the group.
func (g *drainGroup) run(args ...string) (int, string, string) {
	g.t.Helper()
	return cli(g.t, context.Background(), append([]string{"-servers", g.addr, "-group", g.paths.Group}, args...)...)
}

// member makes a live member: its node, an ephemeral of a session of its
// own, with info as its data.
func (g *drainGroup) member(name string, info membership.Info) {
	g.t.Helper()
	conn, _, err := zk.Connect([]string{g.addr}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(conn.Close)
	if err := zkpath.Ensure(conn, g.paths.Members()); err != nil {
		g.t.Fatal(err)
	}
	if _, err := conn.Create(g.paths.Member(name), info.Data(), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		g.t.Fatal(err)
	}
}

// sticky is a member's Info for the sticky strategy with a weight.
func sticky(weight int) membership.Info {
	return membership.Info{Host: "h", PID: 1, Strategy: stickyStrategy, Weight: weight}
}

// create makes a persistent node, its parents first.
func (g *drainGroup) create(p string, data []byte) {
	g.t.Helper()
	if err := zkpath.Ensure(g.conn, p[:strings.LastIndexByte(p, '/')]); err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		g.t.Fatalf("create %s: %v", p, err)
	}
}

// record writes an assignment record of events:0-29 over members, with
// the views' zxids given, and returns its head and whom it gives what.
func (g *drainGroup) record(members []rebalance.Member, membersZxid, partsZxid int64) (assignment.Head, map[string][]rebalance.Partition) {
	g.t.Helper()
	var parts []rebalance.Partition
	for id := range int32(30) {
		parts = append(parts, rebalance.Partition{Topic: "events", ID: id})
	}
	r, err := rebalance.Sticky(rebalance.Placement{}, members, parts)
	if err != nil {
		g.t.Fatal(err)
	}
	enc, err := assignment.Encode(assignment.Input{MembersZxid: membersZxid, PartitionsZxid: partsZxid, Members: members, Placement: r.Next}, assignment.Head{})
	if err != nil {
		g.t.Fatal(err)
	}
	g.create(g.paths.Assignment(), enc.HeadData)
	for _, n := range enc.Create {
		g.create(g.paths.Share(n.Name), n.Data)
	}
	return enc.Head, r.Assigned()
}

// marks lists the drain marks there are.
func (g *drainGroup) marks() []string {
	g.t.Helper()
	names, err := children(g.conn, g.paths.Drained())
	if err != nil {
		g.t.Fatal(err)
	}
	return names
}

// TestDrainRoundTrip: drain writes a mark with its date and host and
// says how many partitions move; a second drain and an undrain of a
// member not drained say so and exit 0; undrain deletes the mark. A
// member known only by its seat or by the record can be drained too.
func TestDrainRoundTrip(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	g := newDrainGroup(t, srv, "dr")
	g.member("a", sticky(1))
	g.member("b", sticky(2))
	g.create(g.paths.Seat("s"), nil)
	head, _ := g.record([]rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 1}}, 7, 8)
	eb, _ := head.Of("b")
	if eb.Count == 0 {
		t.Fatalf("b owns nothing in the record: %+v", head)
	}

	before := time.Now().UTC().Truncate(time.Second)
	code, out, errOut := g.run("drain", "b")
	if want := fmt.Sprintf("drained b (its %d partitions move to the others with the usual hand-off)\n", eb.Count); code != 0 || out != want || errOut != "" {
		t.Fatalf("drain b: exit %d, stdout %q, stderr %q; want 0, %q", code, out, errOut, want)
	}
	data, _, err := g.conn.Get(g.paths.DrainedMember("b"))
	if err != nil {
		t.Fatalf("b's mark: %v", err)
	}
	var m drainMark
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("b's mark %q: %v", data, err)
	}
	at, err := time.Parse(time.RFC3339, m.At)
	host, _ := os.Hostname()
	if err != nil || at.Before(before) || at.After(time.Now()) || !strings.HasSuffix(m.At, "Z") || m.Host != host || m.Name != "" {
		t.Errorf("b's mark %s: want {\"at\": now in UTC, \"host\": %q}", data, host)
	}

	code, out, errOut = g.run("drain", "b")
	if code != 0 || out != "" || !strings.Contains(errOut, "zkalloc: b is already drained (since "+m.At+", from host "+host+"); nothing to do") {
		t.Errorf("drain b again: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if marks := g.marks(); !slices.Equal(marks, []string{"b"}) {
		t.Errorf("marks %v after draining b twice, want [b]", marks)
	}

	// c is only in the record, s only a seat: both known.
	if code, out, errOut := g.run("drain", "c"); code != 0 || !strings.HasPrefix(out, "drained c (its ") {
		t.Errorf("drain c (in the record): exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := g.run("drain", "s"); code != 0 || out != "drained s (its partitions, if it has any, move to the others with the usual hand-off)\n" {
		t.Errorf("drain s (a seat): exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = g.run("undrain", "b", "c", "s")
	if want := "undrained b (it takes a share again, moved to it with the usual hand-off)\n"; code != 0 || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 3 || errOut != "" {
		t.Errorf("undrain b c s: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if marks := g.marks(); len(marks) != 0 {
		t.Errorf("marks %v after undrain, want none", marks)
	}
	code, out, errOut = g.run("undrain", "b")
	if code != 0 || out != "" || errOut != "zkalloc: b is not drained; nothing to do\n" {
		t.Errorf("undrain b again: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDrainSeveralInOneMulti: the marks of several members, and their
// parent, are created in one transaction: one zxid.
func TestDrainSeveralInOneMulti(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	g := newDrainGroup(t, srv, "multi")
	for _, n := range []string{"a", "b", "c"} {
		g.member(n, sticky(1))
	}
	code, out, errOut := g.run("drain", "a", "b", "a")
	if code != 0 || out != "drained a (its partitions, if it has any, move to the others with the usual hand-off)\ndrained b (its partitions, if it has any, move to the others with the usual hand-off)\n" {
		t.Fatalf("drain a b a: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var zxids []int64
	for _, p := range []string{g.paths.Drained(), g.paths.DrainedMember("a"), g.paths.DrainedMember("b")} {
		_, st, err := g.conn.Get(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		zxids = append(zxids, st.Czxid)
	}
	if zxids[0] != zxids[1] || zxids[1] != zxids[2] {
		t.Errorf("czxids of drained/, a's and b's marks: %x, want one transaction's", zxids)
	}
	// A later drain of c, and of a again, is a transaction of its own.
	code, out, errOut = g.run("drain", "a", "b", "c")
	if code == 0 {
		t.Fatalf("drain a b c (the last undrained): exit 0, stdout %q", out)
	}
	if !strings.Contains(errOut, "draining c would leave no live member undrained") {
		t.Errorf("drain a b c: stderr %q", errOut)
	}
}

// TestDrainRefusals: each refusal exits with its code, names what is
// wrong, and writes nothing.
func TestDrainRefusals(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	g := newDrainGroup(t, srv, "ref")
	g.member("a", sticky(1))
	g.member("b", sticky(1))
	g.create(g.paths.Seat("s"), nil)
	g.record([]rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "r", Weight: 1}}, 1, 2)

	stateless := newDrainGroup(t, srv, "stateless")
	stateless.member("a", sticky(1))
	stateless.member("m", membership.Info{Host: "h", PID: 1, Strategy: "balanced"})

	tests := []struct {
		name string
		g    *drainGroup
		args []string
		code int
		want string // in stderr
	}{
		{"no group", g, []string{"-group", "nosuch", "drain", "a"}, exitError, `no group "nosuch" under /zkalloc (groups: ref, stateless)`},
		{"invalid name", g, []string{"drain", "a/b"}, exitUsage, `member "a/b": not a valid member name: contains '/'`},
		{"invalid name among valid", g, []string{"drain", "a", ".."}, exitUsage, `member "..": not a valid member name: reserved`},
		{"no name", g, []string{"undrain"}, exitUsage, "undrain needs one or more member names"},
		{"unknown", g, []string{"drain", "a", "zz"}, exitError, "unknown member zz in group ref: not a live member, not a seat, not in the assignment record, not drained (live members: a, b); nothing drained"},
		{"unknown, no record", stateless, []string{"drain", "y", "z"}, exitError, "unknown members y, z in group stateless: not a live member, not a seat, not drained (live members: a, m)"},
		{"stateless strategy", stateless, []string{"drain", "a"}, exitError, "drain needs the sticky strategy; member m runs balanced (nothing drained)"},
		{"the last undrained", g, []string{"drain", "a", "b", "s", "r"}, exitError, "draining a, b, s, r would leave no live member undrained: the partitions would have nobody to go to (nothing drained); undrain another member first"},
		{"a flag of status only", g, []string{"drain", "-check", "a"}, exitUsage, "-check does not apply to drain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := tt.g.run(tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) || out != "" {
				t.Errorf("zkalloc %q: exit %d, stdout %q, stderr %q; want exit %d, %q", tt.args, code, out, errOut, tt.code, tt.want)
			}
			for _, dg := range []*drainGroup{g, stateless} {
				if ok, _, err := dg.conn.Exists(dg.paths.Drained()); ok || err != nil {
					t.Errorf("%s exists after a refusal (%v)", dg.paths.Drained(), err)
				}
			}
		})
	}
}

// TestDrainAuth: in a group written with credentials (all for the
// identity, read for everyone), drain needs -auth, and its marks get the
// group's ACL, so that only the identity can undrain.
func TestDrainAuth(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	conn, _, err := zk.Connect([]string{srv.Addr()}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.AddAuth("digest", []byte("user:secret")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "user", "secret"), zk.WorldACL(zk.PermRead)...)
	paths := zkpath.Group{Root: "/zkalloc", Group: "locked"}
	for _, p := range []string{"/zkalloc", "/zkalloc/groups", paths.Dir(), paths.Members()} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b"} {
		if _, err := conn.Create(paths.Member(n), sticky(1).Data(), zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"-servers", srv.Addr(), "-group", "locked"}
	if code, out, errOut := cli(t, context.Background(), append(base, "drain", "a")...); code != exitError || out != "" || !strings.Contains(errOut, "nothing drained") || !strings.Contains(errOut, "authenticated") {
		t.Errorf("drain without -auth: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ok, _, _ := conn.Exists(paths.Drained()); ok {
		t.Errorf("%s created by a refused drain", paths.Drained())
	}
	if code, _, errOut := cli(t, context.Background(), append(base, "-auth", "digest:user:secret", "drain", "a")...); code != 0 {
		t.Fatalf("drain with -auth: exit %d: %s", code, errOut)
	}
	for _, p := range []string{paths.Drained(), paths.DrainedMember("a")} {
		got, _, err := conn.GetACL(p)
		if err != nil || !slices.Equal(got, acl) {
			t.Errorf("ACL of %s: %v (%v), want the group's %v", p, got, err, acl)
		}
	}
	if code, _, errOut := cli(t, context.Background(), append(base, "undrain", "a")...); code != exitError || !strings.Contains(errOut, "nothing undrained") {
		t.Errorf("undrain without -auth: exit %d, stderr %q", code, errOut)
	}
}

// TestDrainHelp: help drain and undrain -h say what the commands do and
// refuse; the usage lists both.
func TestDrainHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"help", "drain"}, []string{"zkalloc [flags] drain MEMBER...", "drained/<member>", "one transaction", "would leave no live member undrained", "already drained"}},
		{[]string{"undrain", "-h"}, []string{"zkalloc [flags] undrain MEMBER...", "not drained is no error"}},
		{[]string{"help"}, []string{"drain MEMBER...", "undrain MEMBER..."}},
	} {
		code, out, errOut := cli(t, context.Background(), tt.args...)
		for _, want := range tt.want {
			if code != exitOK || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("zkalloc %q: exit %d, stdout lacks %q:\n%s%s", tt.args, code, want, out, errOut)
			}
		}
	}
}
