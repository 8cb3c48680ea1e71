package zklaunch

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultTickTime is the tick used when [Config.TickTime] is zero. It is
// shorter than ZooKeeper's 2 s default so that session timeouts, which the
// server clamps to between 2 and 20 ticks by default, can be short.
const DefaultTickTime = 500 * time.Millisecond

// Config is what one server's zoo.cfg says. The zero value, with DataDir
// and ClientPort set, describes a standalone server.
type Config struct {
	// TickTime is ZooKeeper's time unit (tickTime); zero means
	// [DefaultTickTime].
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout
	// the server grants; zero means ZooKeeper's defaults, 2 and 20 ticks.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// DataDir is the server's data directory (dataDir).
	DataDir string
	// ClientPort is the port the server listens on for clients, on
	// 127.0.0.1.
	ClientPort int
	// Peers lists the members of an ensemble, this server among them; nil
	// for a standalone server.
	Peers []Peer
	// SyncLimit is how many ticks a follower may go without hearing from
	// its leader (syncLimit). It applies to ensembles only.
	SyncLimit int
}

// Peer is one member of an ensemble as zoo.cfg lists it.
type Peer struct {
	ID           int // myid, from 1
	PeerPort     int // followers connect to the leader here
	ElectionPort int // leader election
}

// Render returns the zoo.cfg text. It is deterministic.
func (c Config) Render() string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	kv("tickTime", ms(cmp.Or(c.TickTime, DefaultTickTime)))
	kv("dataDir", c.DataDir)
	kv("clientPort", c.ClientPort)
	kv("clientPortAddress", Loopback)
	if c.MinSessionTimeout > 0 {
		kv("minSessionTimeout", ms(c.MinSessionTimeout))
	}
	if c.MaxSessionTimeout > 0 {
		kv("maxSessionTimeout", ms(c.MaxSessionTimeout))
	}
	kv("admin.enableServer", false)
	kv("4lw.commands.whitelist", "*")
	// Durability against power loss is not what a local server is for.
	kv("forceSync", "no")
	// Many local clients share 127.0.0.1; the default limit per IP is 60.
	kv("maxClientCnxns", 0)
	if c.Peers != nil {
		kv("initLimit", 10)
		kv("syncLimit", c.SyncLimit)
		if len(c.Peers) == 1 {
			// Keep a one-member ensemble a quorum peer (Mode: leader).
			kv("standaloneEnabled", false)
		}
		for _, p := range c.Peers {
			kv("server."+strconv.Itoa(p.ID), fmt.Sprintf("%s:%d:%d", Loopback, p.PeerPort, p.ElectionPort))
		}
	}
	return b.String()
}

// Write writes dir/zoo.cfg.
func (c Config) Write(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, cfgName), []byte(c.Render()), 0o644); err != nil {
		return fmt.Errorf("zklaunch: write zoo.cfg: %w", err)
	}
	return nil
}
