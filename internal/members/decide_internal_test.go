package members

import (
	"math"
	"testing"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	own := map[int64]struct{}{0x10: {}, 0x11: {}, 0x12: {}}
	tests := []struct {
		name    string
		owner   int64
		current int64
		own     map[int64]struct{}
		joined  bool
		want    decision
	}{
		{"ours in the current session", 0x12, 0x12, own, true, keep},
		{"current session not yet recorded as ours", 0x13, 0x13, own, false, keep},
		{"left by an earlier session of ours", 0x10, 0x12, own, true, replace},
		{"left by the previous session of ours", 0x11, 0x12, own, true, replace},
		{"held by a foreign session after we joined", 0x99, 0x12, own, true, refuse},
		{"held by a foreign session before we joined: a crashed run", 0x99, 0x12, own, false, wait},
		{"foreign, no earlier sessions", 0x99, 0x12, nil, false, wait},
		{"persistent node", 0, 0x12, own, true, refuse},
		{"persistent node, before we joined", 0, 0x12, own, false, refuse},
		{"container node, before we joined", math.MinInt64, 0x12, own, false, refuse},
		{"persistent node, even if 0 were recorded", 0, 0x12, map[int64]struct{}{0: {}, 0x12: {}}, false, refuse},
		{"persistent node, read without a session", 0, 0, own, false, refuse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.owner, tt.current, tt.own, tt.joined); got != tt.want {
				t.Errorf("decide(%#x, %#x, %v, %v) = %d, want %d", tt.owner, tt.current, tt.own, tt.joined, got, tt.want)
			}
		})
	}
}
