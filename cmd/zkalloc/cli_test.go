package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

// TestUsageSaysWhy: bad command lines exit 2 and say what is wrong, in
// the command's words (flags, not the library's fields).
func TestUsageSaysWhy(t *testing.T) {
	t.Parallel()
	const rule = "topic names use a-z A-Z 0-9 . _ -"
	tests := []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"-group", "g", "partitions", "add", "a:1;b:2"}, []string{`topic "a:1;b": character ':' at byte 1 is not allowed; ` + rule}},
		{[]string{"partitions", "add", "a:1;b:2"}, []string{`topic "a:1;b": character ':' at byte 1 is not allowed; ` + rule}},
		{[]string{"-group", "g", "partitions", "add", "events 1:0"}, []string{`character ' ' at byte 6 is not allowed`}},
		{[]string{"-group", "g", "partitions", "remove", "évents:0"}, []string{`character 'é' at byte 0`}},
		{[]string{"-group", "g", "partitions", "add", "events:5-3"}, []string{`"5-3": a descending range; write 3-5`}},
		{[]string{"-group", "g", "partitions", "add", "events:-1"}, []string{`"-1": IDs are not negative`}},
		{[]string{"-group", "g", "partitions", "add", "events:0-2000000"}, []string{"more than 1048576 IDs (2^20)"}},
		{[]string{"-group", "g", "partitions", "add", "events:2147483648"}, []string{"out of range: at most 2147483647"}},
		{[]string{"-group", "g", "partitions", "add", "events:x"}, []string{`"x" is not an ID`}},
		{[]string{"-group", "g", "partitions", "add", "events:1,,2"}, []string{"an empty ID"}},
		{[]string{"-group", "g", "-servers", "a:b:c", "status"}, []string{`-servers "a:b:c": server "a:b:c": want host:port`}},
		{[]string{"-servers", "h:0", "demo"}, []string{`-servers "h:0": server "h:0": port 0 is out of range`}},
		{[]string{"-group", "a/b", "status"}, []string{`-group "a/b": contains '/'`}},
		{[]string{"-group", "g", "-root", "x", "status"}, []string{`-root "x": want an absolute path`}},
		{[]string{"-group", "g", "-create", "status"}, []string{"-create does not apply to status (only to partitions add)"}},
		{[]string{"-group", "g", "partitions", "remove", "-create", "e:1"}, []string{"-create does not apply to partitions remove"}},
		{[]string{"-group", "g", "-check", "partitions", "list"}, []string{"-check does not apply"}},
		{[]string{"-group", "g", "-max-handoff-age", "1m", "status"}, []string{"-max-handoff-age applies with -check"}},
		{[]string{"-group", "g", "groups", "list"}, []string{"-group does not apply to groups list"}},
		{[]string{"groups"}, []string{"groups needs one of: list, delete"}},
		{[]string{"groups", "delete"}, []string{"groups delete takes one group"}},
		{[]string{"partitions", "list"}, []string{"partitions list needs -group"}},
		{[]string{"help", "frobnicate"}, []string{`no command "frobnicate"`}},
		{[]string{"version", "extra"}, []string{"version takes no arguments"}},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, context.Background(), tt.args...)
		if code != exitUsage {
			t.Errorf("zkalloc %q: exit %d, want %d; stderr %s", tt.args, code, exitUsage, errOut)
		}
		for _, want := range tt.want {
			if !strings.Contains(errOut, want) {
				t.Errorf("zkalloc %q: stderr lacks %q:\n%s", tt.args, want, errOut)
			}
		}
		if strings.Contains(errOut, "Servers[") || strings.Contains(errOut, "Config.") {
			t.Errorf("zkalloc %q: stderr names the library's fields:\n%s", tt.args, errOut)
		}
	}
	if def := newFlags(&options{}).Lookup("timeout").DefValue; def != "5s" {
		t.Errorf("-timeout defaults to %s, want 5s", def)
	}
}

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"help"}, []string{"groups delete G", "status [-check", "exit status:", "3  status -check found a problem", "a-z A-Z 0-9 . _ -"}},
		{[]string{"-h"}, []string{"exit status:"}},
		{[]string{"help", "partitions"}, []string{"zkalloc [flags] partitions add [-create]", "not in the set", "a-z A-Z 0-9 . _ -"}},
		{[]string{"partitions", "add", "-h"}, []string{"zkalloc [flags] partitions add [-create]"}},
		{[]string{"groups", "-h"}, []string{"refuses a group with live"}},
		{[]string{"version"}, []string{"zkalloc ", runtime.Version()}},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, context.Background(), tt.args...)
		if code != exitOK {
			t.Errorf("zkalloc %q: exit %d; stderr %s", tt.args, code, errOut)
		}
		for _, want := range tt.want {
			if !strings.Contains(out, want) {
				t.Errorf("zkalloc %q: stdout lacks %q:\n%s", tt.args, want, out)
			}
		}
	}
	_, out, _ := cli(t, context.Background(), "-json", "version")
	var v buildVersion
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "" || v.Go != runtime.Version() {
		t.Errorf("version -json = %q (%v), want the module's version and %s", out, err, runtime.Version())
	}
}

// fakeMember creates a member node for name in its own session, as a
// member of this version writes it but with the version given; closing
// the returned connection ends it.
func fakeMember(t *testing.T, addr, group, name, version string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	info := membership.ThisProcess("balanced")
	info.Version = version
	dir := "/zkalloc/groups/" + group + "/members"
	if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if _, err := conn.Create(dir+"/"+name, info.Data(), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestGroupsNeverByAccident: a write to a group that does not exist
// creates nothing without -create; reads name the groups there are;
// removes name what was not in the set; JSON keeps "=>" as it is; groups
// delete refuses a group with live members, then deletes all of it.
func TestGroupsNeverByAccident(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	base := []string{"-servers", srv.Addr()}
	run := func(args ...string) (int, string, string) {
		return cli(t, context.Background(), append(base, args...)...)
	}

	if code, _, errOut := run("-group", "g1", "partitions", "add", "events:0-3"); code != exitError ||
		!strings.Contains(errOut, `no group "g1" under /zkalloc (no groups); -create creates it`) {
		t.Errorf("add to a missing group: exit %d, stderr %q", code, errOut)
	}
	if code, out, _ := run("groups", "list"); code != 0 || out != "no groups under /zkalloc\n" {
		t.Errorf("groups list after a refused add: exit %d, %q; want no groups", code, out)
	}
	if code, _, errOut := run("-group", "g1", "partitions", "add", "-create", "events:0-3"); code != 0 {
		t.Fatalf("add -create: exit %d: %s", code, errOut)
	}
	for _, cmd := range [][]string{{"status"}, {"partitions", "list"}, {"watch"}} {
		code, out, errOut := run(append([]string{"-group", "g2"}, cmd...)...)
		if code != exitError || out != "" || !strings.Contains(errOut, `no group "g2" under /zkalloc (groups: g1)`) {
			t.Errorf("%v on a misspelt group: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
	code, out, errOut := run("-group", "g1", "partitions", "remove", "events:3,7", "audit:1")
	if code != 0 || out != "events:0-2\n" || !strings.Contains(errOut, "not in the set, so not removed: audit:1 events:7") {
		t.Errorf("remove of present and absent: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A topic node another program wrote with a name outside the rule:
	// reported as corrupt, not taken.
	conn := fakeMember(t, srv.Addr(), "g1", "m9", "zkalloc/v1.0.0 => ../zkalloc <local>")
	if _, err := conn.Create("/zkalloc/groups/g1/partitions/a:b", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("-group", "g1", "partitions", "list"); code != 0 || !strings.Contains(out, `# corrupt: topic "a:b": rebalance: invalid topic "a:b": character ':' at byte 1`) {
		t.Errorf("list with a topic node named a:b: exit %d, %q", code, out)
	}
	if code, out, _ := run("-group", "g1", "-json", "status"); code != 0 || !strings.Contains(out, `"version": "zkalloc/v1.0.0 => ../zkalloc <local>"`) {
		t.Errorf("status -json escapes the version or lacks it: exit %d:\n%s", code, out)
	}
	code, out, errOut = run("-json", "groups", "list")
	if code != 0 || strings.TrimSpace(out) != `[{"group":"g1","members":1,"partitions":3}]` {
		t.Errorf("groups list -json: exit %d, %q, %s", code, out, errOut)
	}

	for _, p := range []string{"/zkalloc/groups/g1/holds", "/zkalloc/groups/g1/holds/events:0", "/zkalloc/groups/g1/seats", "/zkalloc/groups/g1/seats/m8"} {
		if _, err := conn.Create(p, []byte("0x1 m8"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := run("groups", "delete", "g1"); code != exitError || !strings.Contains(errOut, `group "g1" has 1 live members: m9 (host `) {
		t.Errorf("delete with a live member: exit %d, stderr %q", code, errOut)
	}
	conn.Close() // m9's node goes with its session
	if code, out, errOut := run("groups", "delete", "g1"); code != 0 || !strings.Contains(out, "deleted group g1") {
		t.Errorf("delete: exit %d, %q, %s", code, out, errOut)
	}
	if code, out, _ := run("groups", "list"); code != 0 || out != "no groups under /zkalloc\n" {
		t.Errorf("groups list after delete: exit %d, %q", code, out)
	}
	if code, _, errOut := run("groups", "delete", "g1"); code != exitError || !strings.Contains(errOut, `no group "g1"`) {
		t.Errorf("delete twice: exit %d, %q", code, errOut)
	}
}

// TestStatusCheck: -check exits 3 with one line per problem, and 0 once
// the group is settled; hand-offs carry their age.
func TestStatusCheck(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	base := []string{"-servers", srv.Addr(), "-group", "chk"}
	run := func(args ...string) (int, string, string) {
		return cli(t, context.Background(), append(base, args...)...)
	}
	if code, _, errOut := run("partitions", "add", "-create", "events:0-3", "audit:0"); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	code, out, _ := run("status", "-check")
	if want := "unowned audit:0: no member runs\nunowned events:0-3: no member runs\n"; code != exitProblem || out != want {
		t.Errorf("check with no members: exit %d, %q; want %d, %q", code, out, exitProblem, want)
	}
	m1 := startMember(t, []string{srv.Addr()}, "chk", "m1", nil, balanced)
	eventually(t, "status -check passes once m1 owns everything", func() (bool, string) {
		code, out, errOut := run("status", "-check")
		return code == 0 && strings.HasPrefix(out, "ok: group chk: 1 members"), fmt.Sprintf("exit %d: %s%s", code, out, errOut)
	})
	// A member that never claims (a node without an allocator): the
	// partitions it is given are hand-offs that never end.
	fakeMember(t, srv.Addr(), "chk", "m0", "zkalloc/test")
	var st groupStatus
	eventually(t, "m1 gives m0 its share, which nobody takes", func() (bool, string) {
		_, out, _ := run("-json", "status")
		st = groupStatus{}
		_ = json.Unmarshal([]byte(out), &st)
		return len(st.Handoffs) > 0 && len(st.Unowned) == len(st.Handoffs) && len(m1.Current().Pending) == 0, out
	})
	for _, h := range st.Handoffs {
		if h.To != "m0" || h.Age == "" {
			t.Errorf("hand-off %+v: want to m0, with an age", h)
		}
	}
	if code, out, _ := run("status", "-check", "-max-handoff-age", "1h"); code != 0 {
		t.Errorf("check with young hand-offs: exit %d: %s", code, out)
	}
	eventually(t, "status -check with a bound of 1ms names each hand-off", func() (bool, string) {
		code, out, _ := run("status", "-check", "-max-handoff-age", "1ms")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		ok := code == exitProblem && len(lines) == len(st.Handoffs) && strings.HasPrefix(lines[0], "hand-off ") && strings.Contains(lines[0], " from nobody to m0: ")
		return ok, fmt.Sprintf("exit %d, %d lines for %d hand-offs:\n%s", code, len(lines), len(st.Handoffs), out)
	})
	if code, out, _ := run("status"); code != 0 || !strings.Contains(out, "HAND-OFF  FROM  TO  AGE") {
		t.Errorf("status: exit %d, no hand-off table with ages:\n%s", code, out)
	}
}
