package claims

import (
	"path"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/rebalance"
)

// FuzzClaimNode checks the two things read back from a claim: its node
// name, which fired parses with rebalance.Parse (a watch's key is the
// partition's String), and its data, the member name written at creation,
// which logStuck joins to members/ to read the holder's node. For a valid
// partition and member name, the claim's path must be a child of owners/
// whose name parses back to the partition, and the holder's path must be
// the member's own node.
func FuzzClaimNode(f *testing.F) {
	f.Add("events", int32(0), "member-1")
	f.Add("a:b", int32(2147483647), "host:42")
	f.Add("t", int32(7), "..")
	f.Add("t", int32(7), "a/b")
	f.Add("t", int32(-7), "m")
	f.Add(strings.Repeat("x", rebalance.MaxNameLen), int32(1), strings.Repeat("y", rebalance.MaxNameLen))
	f.Fuzz(func(t *testing.T, topic string, id int32, member string) {
		p := rebalance.Partition{Topic: topic, ID: id}
		if rebalance.ValidateTopic(topic) != nil || id < 0 {
			return
		}
		c := &Actor{cfg: Config{Paths: zkpath.Group{Root: "/zkalloc", Group: "g"}, Member: member}}
		claim := c.path(p)
		if dir := path.Dir(claim); dir != c.cfg.Paths.Owners() {
			t.Fatalf("claim of %#v at %q: parent %q, want %q", p, claim, dir, c.cfg.Paths.Owners())
		}
		if got, err := rebalance.Parse(path.Base(claim)); err != nil || got != p {
			t.Fatalf("claim of %#v at %q: Parse(base) = %#v, %v", p, claim, got, err)
		}
		if rebalance.ValidateName(member) != nil || len(member) > rebalance.MaxNameLen {
			return // New refuses such a member name
		}
		data := []byte(c.cfg.Member) // as claim and claimBatch write it
		holder := c.cfg.Paths.Member(string(data))
		if path.Dir(holder) != c.cfg.Paths.Members() || path.Base(holder) != member || path.Clean(holder) != holder {
			t.Fatalf("claim data %q leads to %q, not member %q's node", data, holder, member)
		}
	})
}

// FuzzHoldRecord checks the hold record's codec: whatever a record holds
// (another program may write anything), parseHold never panics, and what
// it accepts names a session other than 0 and a valid member, within the
// bound; what holdData writes for those it reads back.
func FuzzHoldRecord(f *testing.F) {
	f.Add([]byte("0x1234abcd m1"))
	f.Add([]byte("0x0 m"))
	f.Add([]byte("0xffffffffffffffff m"))
	f.Add([]byte("0x12 ../etc"))
	f.Add([]byte("12 m"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		sid, member, ok := parseHold(data)
		if !ok {
			return
		}
		if sid == 0 || rebalance.ValidateName(member) != nil || len(member) > rebalance.MaxNameLen || len(data) > maxHoldData {
			t.Fatalf("parseHold(%q) accepted session %#x, member %q", data, sid, member)
		}
		back, m2, ok2 := parseHold(holdData(sid, member))
		if !ok2 || back != sid || m2 != member {
			t.Fatalf("holdData(%#x, %q) reads back as %#x, %q, %v", sid, member, back, m2, ok2)
		}
	})
}
