package zklaunch

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	base := "tickTime=500\ndataDir=/d/data\nclientPort=2181\nclientPortAddress=127.0.0.1\n"
	common := "admin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=no\nmaxClientCnxns=0\n"
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "standalone",
			cfg:  Config{DataDir: "/d/data", ClientPort: 2181},
			want: base + common,
		},
		{
			name: "session bounds",
			cfg:  Config{DataDir: "/d/data", ClientPort: 2181, TickTime: 500 * time.Millisecond, MinSessionTimeout: time.Second, MaxSessionTimeout: 4 * time.Second},
			want: base + "minSessionTimeout=1000\nmaxSessionTimeout=4000\n" + common,
		},
		{
			name: "ensemble",
			cfg: Config{DataDir: "/d/data", ClientPort: 2181, TickTime: 500 * time.Millisecond, SyncLimit: 5,
				Peers: []Peer{{1, 3001, 4001}, {2, 3002, 4002}}},
			want: base + common + "initLimit=10\nsyncLimit=5\n" +
				"server.1=127.0.0.1:3001:4001\nserver.2=127.0.0.1:3002:4002\n",
		},
		{
			name: "ensemble of one",
			cfg: Config{DataDir: "/d/data", ClientPort: 2181, TickTime: 500 * time.Millisecond, SyncLimit: 10,
				Peers: []Peer{{1, 3001, 4001}}},
			want: base + common + "initLimit=10\nsyncLimit=10\nstandaloneEnabled=false\n" +
				"server.1=127.0.0.1:3001:4001\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Render(); got != tt.want {
				t.Errorf("Render() =\n%s\nwant\n%s", got, tt.want)
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
	small, def := JVM{}.javaArgs(), JVM{Default: true}.javaArgs()
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
