package zkalloc

import (
	"errors"
	"slices"
	"testing"
)

func TestParseServers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"127.0.0.1:2181"}, []string{"127.0.0.1:2181"}},
		{[]string{"zk1"}, []string{"zk1:2181"}},
		{[]string{"zk1:1", "zk2:65535"}, []string{"zk1:1", "zk2:65535"}},
		{[]string{"[::1]:2182"}, []string{"[::1]:2182"}},
		{[]string{"[::1]"}, []string{"[::1]:2181"}},
		{[]string{"[fe80::1%eth0]:2181"}, []string{"[fe80::1%eth0]:2181"}},
		{[]string{"a:1,b,[::1]:3"}, []string{"a:1", "b:2181", "[::1]:3"}},
	}
	for _, tt := range tests {
		got, chroot, err := parseServers(tt.in)
		if err != nil || !slices.Equal(got, tt.want) || chroot != "" {
			t.Errorf("parseServers(%q) = %q, %q, %v; want %q", tt.in, got, chroot, err, tt.want)
		}
	}
	if _, _, err := parseServers([]string{"h:2181", "h:x"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("parseServers with a bad port = %v, want ErrInvalidConfig", err)
	}
}
