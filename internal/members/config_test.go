package members_test

import (
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// The actor has no defaults: the allocator sets every field, and New
// refuses a config that misses one, naming it.
func TestNewRequiresEveryField(t *testing.T) {
	t.Parallel()
	full := testConfig(members.Config{Paths: paths, Member: "m", Session: actor.NewLatest[zksession.State]()})
	members.New(full) // does not panic
	tests := []struct {
		field string
		drop  func(*members.Config)
	}{
		{"Paths", func(c *members.Config) { c.Paths.Group = "" }},
		{"Member", func(c *members.Config) { c.Member = "" }},
		{"Session", func(c *members.Config) { c.Session = nil }},
		{"ACL", func(c *members.Config) { c.ACL = nil }},
		{"Resync", func(c *members.Config) { c.Resync = 0 }},
		{"Logger", func(c *members.Config) { c.Logger = nil }},
		{"Clock", func(c *members.Config) { c.Clock = nil }},
	}
	for _, tt := range tests {
		cfg := full
		tt.drop(&cfg)
		if got := panicked(func() { members.New(cfg) }); !strings.Contains(got, "Config."+tt.field+" is required") {
			t.Errorf("New without %s panicked with %q, want it named", tt.field, got)
		}
	}
}

// panicked returns what f panicked with, as a string; "" if it did not.
func panicked(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg, _ = v.(string)
		}
	}()
	f()
	return ""
}
