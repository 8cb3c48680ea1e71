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
