package zktest

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    settings
		wantErr string // substring; "" for no error
	}{
		{name: "zero", opts: Options{}, want: settings{tick: DefaultTickTime, syncLimit: 5}},
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

func TestRender(t *testing.T) {
	base := "tickTime=500\ndataDir=/d/data\nclientPort=2181\nclientPortAddress=127.0.0.1\n"
	common := "admin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=no\nmaxClientCnxns=0\n"
	tests := []struct {
		name string
		cfg  serverConfig
		want string
	}{
		{
			name: "standalone",
			cfg:  serverConfig{dataDir: "/d/data", clientPort: 2181, settings: settings{tick: 500 * time.Millisecond}},
			want: base + common,
		},
		{
			name: "session bounds",
			cfg:  serverConfig{dataDir: "/d/data", clientPort: 2181, settings: settings{tick: 500 * time.Millisecond, minSession: time.Second, maxSession: 4 * time.Second}},
			want: base + "minSessionTimeout=1000\nmaxSessionTimeout=4000\n" + common,
		},
		{
			name: "ensemble",
			cfg: serverConfig{dataDir: "/d/data", clientPort: 2181, settings: settings{tick: 500 * time.Millisecond, syncLimit: 5},
				peers: []peer{{1, 3001, 4001}, {2, 3002, 4002}}},
			want: base + common + "initLimit=10\nsyncLimit=5\n" +
				"server.1=127.0.0.1:3001:4001\nserver.2=127.0.0.1:3002:4002\n",
		},
		{
			name: "ensemble of one",
			cfg: serverConfig{dataDir: "/d/data", clientPort: 2181, settings: settings{tick: 500 * time.Millisecond, syncLimit: 10},
				peers: []peer{{1, 3001, 4001}}},
			want: base + common + "initLimit=10\nsyncLimit=10\nstandaloneEnabled=false\n" +
				"server.1=127.0.0.1:3001:4001\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.render(); got != tt.want {
				t.Errorf("render() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		reply, want string
	}{
		{"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: leader\nNode count: 5\n", "leader"},
		{"Mode: follower\n", "follower"},
		{"Zookeeper version: 3.8.0\nMode: standalone", "standalone"},
		{"This ZooKeeper instance is not currently serving requests\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := parseMode(tt.reply); got != tt.want {
			t.Errorf("parseMode(%q) = %q, want %q", tt.reply, got, tt.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	const l, f, x = modeLeader, modeFollower, ""
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
		if got := soleLeader(tt.modes); got != tt.leader {
			t.Errorf("soleLeader(%q) = %d, want %d", tt.modes, got, tt.leader)
		}
		if got := quorumServing(tt.modes); got != tt.quorum {
			t.Errorf("quorumServing(%q) = %v, want %v", tt.modes, got, tt.quorum)
		}
		if got := allServing(tt.modes); got != tt.all {
			t.Errorf("allServing(%q) = %v, want %v", tt.modes, got, tt.all)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var b strings.Builder
	w := newPrefixWriter(&b, "zk1")
	for _, s := range []string{"one\ntw", "o\n", "", "three\nfour\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	want := "zk1: one\nzk1: two\nzk1: three\nzk1: four\n"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJavaArgsDefaultJVM(t *testing.T) {
	small, def := javaArgs(settings{}), javaArgs(settings{defaultJVM: true})
	if !slices.Contains(small, "-XX:TieredStopAtLevel=1") || !slices.Contains(small, "-Xmx256m") {
		t.Errorf("small JVM flags %v, want the C1-only compiler and a 256 MB heap", small)
	}
	for _, f := range def {
		if strings.HasPrefix(f, "-Xmx") || strings.HasPrefix(f, "-XX:TieredStopAtLevel") || f == "-XX:+UseSerialGC" {
			t.Errorf("DefaultJVM flags %v keep %s", def, f)
		}
	}
	if !slices.Contains(def, "-Djava.net.preferIPv4Stack=true") {
		t.Errorf("DefaultJVM flags %v lost the flags ZooKeeper needs here", def)
	}
}
