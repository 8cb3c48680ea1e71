package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/membership"
)

func TestParseHold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data    string
		session int64
		member  string
		ok      bool
	}{
		{"0x1000abc m1", 0x1000abc, "m1", true},
		{"0x1000ABC billing-7f9c", 0x1000abc, "billing-7f9c", true},
		{"0xffffffffffffffff m1", -1, "m1", true}, // a session ID with its top bit set
		// Anything else is not a record, as members judge it.
		{"", 0, "", false},
		{"garbage", 0, "", false},
		{"0x1000abc", 0, "", false},              // no member
		{"0x1000abc m1\n", 0, "", false},         // not a member name
		{"0x1 a/b", 0, "", false},                // not a member name
		{" 0x1 m1", 0, "", false},                // a space before
		{"0X1 m1", 0, "", false},                 // 0X
		{"1000abc m1", 0, "", false},             // no 0x
		{"0x m1", 0, "", false},                  // no digits
		{"0xzz m1", 0, "", false},                // not hex
		{"0x-5 m1", 0, "", false},                // signed
		{"0x0 m1", 0, "", false},                 // no session is 0
		{"0x10000000000000000 m1", 0, "", false}, // past 64 bits
		{`{"session":"0x1","member":"m1"}`, 0, "", false},
		{"0x1 " + strings.Repeat("m", 250), 0, "", false}, // a member name too long
	}
	for _, tt := range tests {
		session, member, ok := parseHold([]byte(tt.data))
		if session != tt.session || member != tt.member || ok != tt.ok {
			t.Errorf("parseHold(%q) = %#x, %q, %v; want %#x, %q, %v", tt.data, session, member, ok, tt.session, tt.member, tt.ok)
		}
	}
}

// TestStatusShowsHoldRecords: status lists the hold records worth a
// look, made here by hand (the members of this version keep none): one
// of a live member without its claim (an operator deleted the claim);
// two of ended sessions, as members judge them (a session no member
// node has, and a live session that is not the node's of the member the
// record names); one members cannot read; and not one beside its claim. A hand-off of a partition held by record only names the
// record's member, and the human output says what to do instead of
// deleting nodes.
func TestStatusShowsHoldRecords(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	group := "holds"
	base := []string{"-servers", srv.Addr(), "-group", group}
	if code, _, errOut := cli(t, context.Background(), append(base, "partitions", "add", "-create", "events:0-3")...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	// m1 is this session: its member node, a claim on events:0 with its
	// record, and a record on events:1 whose claim is gone.
	m1 := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	sid := fmt.Sprintf("0x%x", m1.SessionID())
	const ended = "0x7f00000000000001" // no session's
	paths := zkpath.Group{Root: "/zkalloc", Group: group}
	for _, p := range []string{paths.Owners(), paths.Holds(), paths.Members()} {
		if err := zkpath.Ensure(m1, p); err != nil {
			t.Fatal(err)
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, n := range []struct {
		path, data string
		flags      int32
	}{
		{paths.Member("m1"), string(membership.Info{Host: "h", PID: 1, Strategy: "balanced"}.Data()), zk.FlagEphemeral},
		{paths.Owners() + "/events:0", "m1", zk.FlagEphemeral},
		{paths.Holds() + "/events:0", sid + " m1", 0},
		{paths.Holds() + "/events:1", sid + " m1", 0},
		{paths.Holds() + "/events:2", ended + " m2", 0},
		{paths.Holds() + "/events:3", "garbage", 0},
		{paths.Holds() + "/events:5", "0x" + sid[2:] + " m3", 0}, // m3 is no member
	} {
		if _, err := m1.Create(n.path, []byte(n.data), n.flags, acl); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}

	code, out, errOut := cli(t, context.Background(), append(base, "-json", "status")...)
	var st groupStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status -json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if want := []holdStatus{{Partition: "events:1", Member: "m1", Session: sid}}; !slices.Equal(st.RecordOnly, want) {
		t.Errorf("record_only %+v, want %+v", st.RecordOnly, want)
	}
	if want := []holdStatus{{Partition: "events:2", Member: "m2", Session: ended}, {Partition: "events:5", Member: "m3", Session: sid}}; !slices.Equal(st.EndedHolds, want) {
		t.Errorf("ended_holds %+v, want %+v", st.EndedHolds, want)
	}
	if want := []holdStatus{{Partition: "events:3", Data: "garbage"}}; !slices.Equal(st.BadHolds, want) {
		t.Errorf("bad_holds %+v, want %+v", st.BadHolds, want)
	}
	want := []handoffStatus{
		{Partition: "events:1", To: "m1", Held: "m1"},
		{Partition: "events:2", To: "m1"},
		{Partition: "events:3", To: "m1"},
	}
	for i := range st.Handoffs {
		if st.Handoffs[i].Age == "" {
			t.Errorf("hand-off %+v has no age", st.Handoffs[i])
		}
		st.Handoffs[i].Age = "" // compared alone
	}
	if !st.HandoffsKnown || !slices.Equal(st.Handoffs, want) {
		t.Errorf("hand-offs %+v (known %v), want %+v", st.Handoffs, st.HandoffsKnown, want)
	}
	// The fields that were there before keep their meaning: a record is
	// no claim.
	if fmt.Sprint(st.Owners) != "map[events:0:m1]" || !slices.Equal(st.Unowned, []string{"events:1", "events:2", "events:3"}) {
		t.Errorf("owners %v, unowned %v", st.Owners, st.Unowned)
	}

	code, out, errOut = cli(t, context.Background(), append(base, "status")...)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("status:\n%s", out)
	for _, want := range []string{
		"m1 (hold record only)",
		"held by record only: claim deleted from outside, or the holder is releasing",
		"left by an ended session; the next owner replaces it",
		`unreadable: "garbage"`,
		"Deleting its claim (owners/) does not help",
		"Never delete hold records",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q", want)
		}
	}
	if n := strings.Count(out, sid); n != 3 {
		t.Errorf("status shows m1's session %d times, want 3: as a member's, for events:1 and for events:5 (not for events:0, whose record stands beside its claim)", n)
	}
}

// The help says what status says: do not delete claims or hold records.
func TestHelpWarnsAgainstDeletes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "status"}, {"status", "-h"}} {
		code, out, errOut := cli(t, context.Background(), args...)
		for _, want := range []string{"Do not delete claims (owners/)", "Never\ndelete hold records (holds/)"} {
			if code != exitOK || !strings.Contains(out, want) {
				t.Errorf("%q: exit %d, help lacks %q:\n%s%s", args, code, want, out, errOut)
			}
		}
	}
}
