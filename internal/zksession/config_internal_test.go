package zksession

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
)

// The session actor has no defaults: the allocator sets every field, and
// New refuses a config that misses one, naming it.
func TestNewRequiresEveryField(t *testing.T) {
	t.Parallel()
	full := Config{Servers: []string{"127.0.0.1:1"}, Timeout: time.Second, Dialer: net.DialTimeout, Logger: slog.New(slog.DiscardHandler), Clock: actor.RealClock()}
	New(full) // does not panic
	tests := []struct {
		field string
		drop  func(*Config)
	}{
		{"Servers", func(c *Config) { c.Servers = nil }},
		{"Timeout", func(c *Config) { c.Timeout = 0 }},
		{"Dialer", func(c *Config) { c.Dialer = nil }},
		{"Logger", func(c *Config) { c.Logger = nil }},
		{"Clock", func(c *Config) { c.Clock = nil }},
	}
	for _, tt := range tests {
		cfg := full
		tt.drop(&cfg)
		if got := panicked(func() { New(cfg) }); !strings.Contains(got, "Config."+tt.field+" is required") {
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
