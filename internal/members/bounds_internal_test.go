package members

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/membership"
)

// TestCheckBounds: the count and the bytes of a member list are bounded,
// at the limits exactly, and each refusal names its limit.
func TestCheckBounds(t *testing.T) {
	names := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("m", size)
		}
		return out
	}
	tests := []struct {
		list   []string
		adding int
		want   string // "" if accepted
	}{
		{names(membership.MaxMembers, 5), 0, ""},
		{names(membership.MaxMembers+1, 5), 0, "MaxMembers)"},
		{names(membership.MaxMembers, 5), 5, "MaxMembers)"},
		{names(membership.MaxMembersBytes/200, 196), 0, ""},
		{names(membership.MaxMembersBytes/200+1, 196), 0, "MaxMembersBytes"},
		{names(membership.MaxMembersBytes/200, 196), 1, "MaxMembersBytes"},
		{nil, 5, ""},
	}
	for _, tt := range tests {
		err := checkBounds(tt.list, tt.adding)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tt.want == "" && err != nil || tt.want != "" && (!strings.Contains(got, tt.want) || !strings.Contains(got, fmt.Sprint(membership.MaxMembers)) && !strings.Contains(got, fmt.Sprint(membership.MaxMembersBytes))) {
			t.Errorf("checkBounds(%d names of %d bytes, adding %d) = %q; want %q", len(tt.list), len(strings.Join(tt.list[:min(1, len(tt.list))], "")), tt.adding, got, tt.want)
		}
	}
}
