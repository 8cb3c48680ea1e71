package rebalance_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

func TestParseAndString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want rebalance.Partition
	}{
		{"events:0", rebalance.Partition{Topic: "events", ID: 0}},
		{"events:2147483647", rebalance.Partition{Topic: "events", ID: 2147483647}},
		{"Events.v2_x-1:12", rebalance.Partition{Topic: "Events.v2_x-1", ID: 12}},
	}
	for _, tt := range tests {
		got, err := rebalance.Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, s, tt.in)
		}
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "events", ":1", "events:", "events:-1", "events:+1", "events:01", "events:1.5",
		"events:2147483648", "events:1x", "a/b:1", "t\x00:1", ".:1", "..:1", "t\u200b:1",
		"a:b:7", "ünïcode:1", "a b:1", "a;b:1",
		strings.Repeat("x", rebalance.MaxNameLen+1) + ":1",
	} {
		if p, err := rebalance.Parse(in); !errors.Is(err, rebalance.ErrInvalid) {
			t.Errorf("Parse(%q) = %v, %v; want ErrInvalid", in, p, err)
		}
	}
}

func TestCompareIsNumeric(t *testing.T) {
	t.Parallel()
	got := []rebalance.Partition{{"t", 10}, {"s", 99}, {"t", 2}, {"t", 1}, {"u", 0}}
	rebalance.Sort(got)
	want := []rebalance.Partition{{"s", 99}, {"t", 1}, {"t", 2}, {"t", 10}, {"u", 0}}
	if !slices.Equal(got, want) {
		t.Errorf("Sort = %v, want %v", got, want)
	}
}
