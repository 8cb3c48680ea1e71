package zkalloc

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/internal/seam"
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
	chroots := []struct {
		in         []string
		want       []string
		wantChroot string
	}{
		{[]string{"127.0.0.1:2181/kafka"}, []string{"127.0.0.1:2181"}, "/kafka"},
		{[]string{"a:1,b:2/kafka/x"}, []string{"a:1", "b:2"}, "/kafka/x"},
		{[]string{"a:1", "b:2/kafka"}, []string{"a:1", "b:2"}, "/kafka"},
		{[]string{"a:1/kafka", "b:2/kafka"}, []string{"a:1", "b:2"}, "/kafka"},
		{[]string{"[::1]:3/kafka", "b"}, []string{"[::1]:3", "b:2181"}, "/kafka"},
		{[]string{"zk/kafka"}, []string{"zk:2181"}, "/kafka"},
		{[]string{"a:1/"}, []string{"a:1"}, ""},
	}
	for _, tt := range chroots {
		got, chroot, err := parseServers(tt.in)
		if err != nil || !slices.Equal(got, tt.want) || chroot != tt.wantChroot {
			t.Errorf("parseServers(%q) = %q, %q, %v; want %q, %q", tt.in, got, chroot, err, tt.want, tt.wantChroot)
		}
	}
	if _, _, err := parseServers([]string{"h:2181", "h:x"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("parseServers with a bad port = %v, want ErrInvalidConfig", err)
	}
}

// The name of an in-memory backend (see package seam) is never a
// server's address: a config that reaches ZooKeeper never reaches a
// backend, and one meant for a backend that is not registered (any
// more) is refused rather than dialled.
func TestBackendNameIsNoServer(t *testing.T) {
	t.Parallel()
	name, unregister := seam.Register("zkalloctest", func(seam.Config) seam.Actors { return seam.Actors{} })
	unregister()
	if got, _, err := parseServers([]string{name}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("parseServers(%q) = %q, %v; want ErrInvalidConfig", name, got, err)
	}
	if _, err := New(Config{Servers: []string{name}, Group: "g", Member: "m"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with the unregistered backend %q: %v, want ErrInvalidConfig", name, err)
	}
}
