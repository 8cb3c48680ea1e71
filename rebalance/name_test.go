package rebalance_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "billing-7f9c", "a.b_c", "ünï", "a:b", "with space", strings.Repeat("x", 300)} {
		if err := rebalance.ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a\nb", "\x7f", "a\u00a0b", "\ufeff", "\uffff", "\ue000", string([]byte{0xff}), "a\U0001F600", "\U00010000"} {
		if err := rebalance.ValidateName(bad); !errors.Is(err, rebalance.ErrInvalid) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	t.Parallel()
	rule := "; topic names use a-z A-Z 0-9 . _ -"
	tests := []struct {
		name string
		want string // "" if valid, else the error's text after "rebalance: invalid "
	}{
		{"events", ""},
		{"Events.v2_billing-7f9c", ""},
		{"_", ""},
		{"...", ""},
		{strings.Repeat("x", rebalance.MaxNameLen), ""},
		{"", "topic: empty name"},
		{".", `topic ".": reserved name`},
		{"..", `topic "..": reserved name`},
		{strings.Repeat("x", rebalance.MaxNameLen+1), `topic "` + strings.Repeat("x", 250) + `": 250 bytes, longer than 249`},
		{"events:1;audit", `topic "events:1;audit": character ':' at byte 6 is not allowed` + rule},
		{"a;b", `topic "a;b": character ';' at byte 1 is not allowed` + rule},
		{"a,b", `topic "a,b": character ',' at byte 1 is not allowed` + rule},
		{"a b", `topic "a b": character ' ' at byte 1 is not allowed` + rule},
		{"tab\t", `topic "tab\t": character '\t' at byte 3 is not allowed` + rule},
		{"a/b", `topic "a/b": character '/' at byte 1 is not allowed` + rule},
		{"ünï", `topic "ünï": character 'ü' at byte 0 is not allowed` + rule},
		{"a\u200bb", `topic "a\u200bb": character '\u200b' at byte 1 is not allowed` + rule},
		{"ok\xff", `topic "ok\xff": byte 0xff at byte 2 is not allowed` + rule},
	}
	for _, tt := range tests {
		err := rebalance.ValidateTopic(tt.name)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateTopic(%q) = %v, want nil", tt.name, err)
		case tt.want != "" && !errors.Is(err, rebalance.ErrInvalid):
			t.Errorf("ValidateTopic(%q) = %v, want ErrInvalid", tt.name, err)
		case tt.want != "" && err.Error() != "rebalance: invalid "+tt.want:
			t.Errorf("ValidateTopic(%q) = %q\nwant %q", tt.name, err, "rebalance: invalid "+tt.want)
		}
	}
}
