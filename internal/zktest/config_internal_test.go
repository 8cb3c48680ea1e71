package zktest

import (
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    settings
		wantErr string // substring; "" for no error
	}{
		{name: "zero", opts: Options{}, want: settings{tick: zklaunch.DefaultTickTime, syncLimit: 5}},
		{
			name: "explicit",
			opts: Options{TickTime: 200 * time.Millisecond, MinSessionTimeout: time.Second, MaxSessionTimeout: 3 * time.Second, SyncLimit: 10, QuorumProxies: true, Dir: "/d"},
			want: settings{tick: 200 * time.Millisecond, minSession: time.Second, maxSession: 3 * time.Second, syncLimit: 10, proxies: true, dir: "/d"},
		},
		{name: "negative sync limit", opts: Options{SyncLimit: -1}, wantErr: "Options.SyncLimit -1"},
		{name: "negative tick", opts: Options{TickTime: -time.Second}, wantErr: "Options.TickTime -1s"},
		{name: "sub-millisecond", opts: Options{MaxSessionTimeout: 1500 * time.Microsecond}, wantErr: "Options.MaxSessionTimeout 1.5ms"},
		{name: "min above default max", opts: Options{MinSessionTimeout: 11 * time.Second}, wantErr: "Options.MinSessionTimeout 11s"},
		{name: "min above max", opts: Options{MinSessionTimeout: 3 * time.Second, MaxSessionTimeout: 2 * time.Second}, wantErr: "exceeds Options.MaxSessionTimeout 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.opts.validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("validate() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("validate() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("validate() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPredicates(t *testing.T) {
	const l, f, x = zklaunch.ModeLeader, zklaunch.ModeFollower, ""
	tests := []struct {
		modes       []string
		leader      int
		quorum, all bool
	}{
		{[]string{f, l, f}, 1, true, true},
		{[]string{x, l, f}, 1, true, false},
		{[]string{x, l, x}, 1, false, false},
		{[]string{f, x, f}, -1, false, false},
		{[]string{l, l, f}, -1, false, false},
		{[]string{l}, 0, true, true},
	}
	for _, tt := range tests {
		if got := zklaunch.SoleLeader(tt.modes); got != tt.leader {
			t.Errorf("soleLeader(%q) = %d, want %d", tt.modes, got, tt.leader)
		}
		if got := quorumServing(tt.modes); got != tt.quorum {
			t.Errorf("quorumServing(%q) = %v, want %v", tt.modes, got, tt.quorum)
		}
		if got := zklaunch.AllServing(tt.modes); got != tt.all {
			t.Errorf("allServing(%q) = %v, want %v", tt.modes, got, tt.all)
		}
	}
}
