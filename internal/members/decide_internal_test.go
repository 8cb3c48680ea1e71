package members

import "testing"

func TestDecide(t *testing.T) {
	t.Parallel()
	own := map[int64]struct{}{0x10: {}, 0x11: {}, 0x12: {}}
	tests := []struct {
		name    string
		owner   int64
		current int64
		own     map[int64]struct{}
		want    decision
	}{
		{"ours in the current session", 0x12, 0x12, own, keep},
		{"current session not yet recorded as ours", 0x13, 0x13, own, keep},
		{"left by an earlier session of ours", 0x10, 0x12, own, replace},
		{"left by the previous session of ours", 0x11, 0x12, own, replace},
		{"held by a foreign session", 0x99, 0x12, own, refuse},
		{"foreign, no earlier sessions", 0x99, 0x12, nil, refuse},
		{"persistent node", 0, 0x12, own, refuse},
		{"persistent node, even if 0 were recorded", 0, 0x12, map[int64]struct{}{0: {}, 0x12: {}}, refuse},
		{"persistent node, read without a session", 0, 0, own, refuse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.owner, tt.current, tt.own); got != tt.want {
				t.Errorf("decide(%#x, %#x, %v) = %d, want %d", tt.owner, tt.current, tt.own, got, tt.want)
			}
		})
	}
}
