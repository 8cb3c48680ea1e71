package claims_test

import (
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/claims"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// The actor has no defaults: the allocator sets every field, and New
// refuses a config that misses one, naming it.
func TestNewRequiresEveryField(t *testing.T) {
	t.Parallel()
	full := claims.FillConfig(claims.Config{Session: actor.NewLatest[zksession.State]()})
	claims.New(full) // does not panic
	tests := []struct {
		field string
		drop  func(*claims.Config)
	}{
		{"Paths", func(c *claims.Config) { c.Paths.Group = "" }},
		{"Member", func(c *claims.Config) { c.Member = "" }},
		{"Session", func(c *claims.Config) { c.Session = nil }},
		{"Logger", func(c *claims.Config) { c.Logger = nil }},
		{"Clock", func(c *claims.Config) { c.Clock = nil }},
		{"ACL", func(c *claims.Config) { c.ACL = nil }},
	}
	for _, tt := range tests {
		cfg := full
		tt.drop(&cfg)
		if got := panicked(func() { claims.New(cfg) }); !strings.Contains(got, "Config."+tt.field+" is required") {
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
