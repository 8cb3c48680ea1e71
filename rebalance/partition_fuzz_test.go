package rebalance_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// FuzzParse feeds Parse arbitrary strings, as a claim's node name or a
// watch's key could hold them. Whatever it accepts must be a valid
// partition written exactly as Partition.String writes it (no sign, no
// leading zeros, the topic before the last colon); whatever it refuses
// must be an ErrInvalid error.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"events:0", "events:2147483647", "a:b:7", "t:", ":1", "t", "t:01", "t:+1", "t:-1",
		"t:2147483648", "a/b:1", ".:1", "..:1", "\xff:1", "\u00a0:1", "t:1:", "t: 1",
		strings.Repeat("x", rebalance.MaxNameLen) + ":1", strings.Repeat("x", rebalance.MaxNameLen+1) + ":1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := rebalance.Parse(s)
		if err != nil {
			if !errors.Is(err, rebalance.ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, want an ErrInvalid error", s, err)
			}
			return
		}
		if err := rebalance.ValidateTopic(p.Topic); err != nil {
			t.Fatalf("Parse(%q) accepted an invalid topic: %v", s, err)
		}
		if p.ID < 0 {
			t.Fatalf("Parse(%q) accepted a negative ID %d", s, p.ID)
		}
		if got := p.String(); got != s {
			t.Fatalf("Parse(%q) = %#v, whose String is %q: not canonical", s, p, got)
		}
	})
}

// FuzzPartitionString checks that Parse reads back what Partition.String
// writes for every valid partition, refuses it for every invalid one, and
// that a valid partition's string is a valid node name (it names the
// partition's claim node).
func FuzzPartitionString(f *testing.F) {
	f.Add("events", int32(0))
	f.Add("a:b", int32(math.MaxInt32))
	f.Add("t", int32(-1))
	f.Add("", int32(3))
	f.Add("a/b", int32(3))
	f.Add("..", int32(3))
	f.Add("x:", int32(3))
	f.Add(strings.Repeat("x", rebalance.MaxNameLen+1), int32(3))
	f.Fuzz(func(t *testing.T, topic string, id int32) {
		p := rebalance.Partition{Topic: topic, ID: id}
		valid := rebalance.ValidateTopic(topic) == nil && id >= 0
		got, err := rebalance.Parse(p.String())
		if !valid {
			if err == nil {
				t.Fatalf("Parse(%q) = %#v for the invalid %#v", p.String(), got, p)
			}
			return
		}
		if err != nil || got != p {
			t.Fatalf("Parse(%q) = %#v, %v; want %#v", p.String(), got, err, p)
		}
		if err := rebalance.ValidateName(p.String()); err != nil {
			t.Fatalf("valid %#v is not a valid claim node name: %v", p, err)
		}
	})
}
