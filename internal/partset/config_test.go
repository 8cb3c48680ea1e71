package partset_test

import (
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// The actor has no defaults: the allocator sets every field, and New
// refuses a config that misses one, naming it, or whose seed is invalid.
func TestNewRequiresEveryField(t *testing.T) {
	t.Parallel()
	paths := zkpath.Group{Root: "/zkalloc", Group: "g"}
	full := testConfig(partset.Config{Paths: paths, Session: actor.NewLatest[zksession.State]()})
	partset.New(full) // does not panic
	tests := []struct {
		field string
		drop  func(*partset.Config)
	}{
		{"Paths", func(c *partset.Config) { c.Paths.Group = "" }},
		{"Session", func(c *partset.Config) { c.Session = nil }},
		{"ACL", func(c *partset.Config) { c.ACL = nil }},
		{"Resync", func(c *partset.Config) { c.Resync = 0 }},
		{"Logger", func(c *partset.Config) { c.Logger = nil }},
		{"Clock", func(c *partset.Config) { c.Clock = nil }},
	}
	for _, tt := range tests {
		cfg := full
		tt.drop(&cfg)
		if got := panicked(func() { partset.New(cfg) }); !strings.Contains(got, "Config."+tt.field+" is required") {
			t.Errorf("New without %s panicked with %q, want it named", tt.field, got)
		}
	}
	cfg := full
	cfg.Seed = map[string][]int32{"t": {-1}}
	if got := panicked(func() { partset.New(cfg) }); !strings.Contains(got, "Config.Seed") {
		t.Errorf("New with an invalid seed panicked with %q, want the seed named", got)
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
