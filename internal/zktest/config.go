package zktest

import (
	"fmt"
	"io"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// Options configures the servers started by [StartServer] and
// [StartEnsemble]. The zero value is ready to use. Options is a plain value;
// the functions that take it copy it.
type Options struct {
	// TickTime is ZooKeeper's time unit (zoo.cfg tickTime): heartbeats,
	// session expiry checks and the defaults of the session timeout bounds
	// are counted in ticks. Zero means [zklaunch.DefaultTickTime], 500 ms,
	// so that session timeouts can be short in tests.
	TickTime time.Duration

	// MinSessionTimeout and MaxSessionTimeout bound the session timeout the
	// server grants: a client's requested timeout is clamped into
	// [MinSessionTimeout, MaxSessionTimeout]. Zero means ZooKeeper's
	// defaults, 2 and 20 ticks (1 s and 10 s with the default tick).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	// Dir is the directory in which each server's own directory (zoo.cfg,
	// data directory and log file) is created. Empty means a new temporary
	// directory, removed by Close. When Dir is set, Close leaves the
	// files in place so that they can be inspected (for example as CI
	// artifacts).
	Dir string

	// SyncLimit is how many ticks an ensemble's follower may go without
	// hearing from its leader (zoo.cfg syncLimit) before it drops its
	// clients and looks for a leader; until then it goes on answering
	// them by itself. Zero means 5. It does not apply to [StartServer].
	SyncLimit int

	// QuorumProxies puts a [Proxy] in every link between two members of an
	// ensemble: those on which a follower talks to its leader (zoo.cfg's
	// peer port) and those of leader election (the election port), so
	// that a test can cut one member off from the others with
	// [Ensemble.BlackholeQuorum], [Ensemble.BlackholeElection] or
	// [Ensemble.Isolate] while its clients still reach it. [StartServer]
	// refuses it.
	QuorumProxies bool

	// Log, if not nil, also receives the servers' output (ZooKeeper's log at
	// INFO level), each line prefixed with the server's name. The output
	// always goes to a file in the server's directory too; its tail is
	// quoted in start errors. Writes to Log are serialized by this package
	// and their errors are ignored, so a failing Log never stalls a server.
	Log io.Writer

	// DefaultJVM starts the servers with the JVM's own heap and compiler
	// defaults, as production runs ZooKeeper, instead of the small JVM
	// without an optimizing compiler that starts quickly. For benchmarks:
	// such a server serves several times the requests a second once warm.
	DefaultJVM bool
}

// defaultSyncLimit is zoo.cfg's syncLimit when [Options.SyncLimit] is zero.
const defaultSyncLimit = 5

// settings are validated, defaulted Options.
type settings struct {
	tick       time.Duration
	minSession time.Duration // 0: ZooKeeper's default
	maxSession time.Duration // 0: ZooKeeper's default
	syncLimit  int           // ticks
	proxies    bool
	dir        string
	log        io.Writer
	defaultJVM bool
}

// validate checks o and fills in its defaults. Errors name the field and
// the bad value.
func (o Options) validate() (settings, error) {
	s := settings{
		tick:       o.TickTime,
		minSession: o.MinSessionTimeout,
		maxSession: o.MaxSessionTimeout,
		syncLimit:  o.SyncLimit,
		proxies:    o.QuorumProxies,
		dir:        o.Dir,
		log:        o.Log,
		defaultJVM: o.DefaultJVM,
	}
	if s.tick == 0 {
		s.tick = zklaunch.DefaultTickTime
	}
	switch {
	case s.syncLimit < 0:
		return settings{}, fmt.Errorf("zktest: Options.SyncLimit %d: want a positive number of ticks, or zero for the default", s.syncLimit)
	case s.syncLimit == 0:
		s.syncLimit = defaultSyncLimit
	}
	fields := []struct {
		name string
		d    time.Duration
	}{
		{"TickTime", s.tick},
		{"MinSessionTimeout", s.minSession},
		{"MaxSessionTimeout", s.maxSession},
	}
	for _, f := range fields {
		if f.d < 0 || f.d%time.Millisecond != 0 {
			return settings{}, fmt.Errorf("zktest: Options.%s %v: want a positive whole number of milliseconds, or zero for the default", f.name, f.d)
		}
	}
	lo, hi := s.minSession, s.maxSession
	if lo == 0 {
		lo = 2 * s.tick
	}
	if hi == 0 {
		hi = 20 * s.tick
	}
	if lo > hi {
		return settings{}, fmt.Errorf("zktest: Options.MinSessionTimeout %v (effective) exceeds Options.MaxSessionTimeout %v (effective)", lo, hi)
	}
	return s, nil
}

// config returns the zoo.cfg of a server with st's settings.
func (st settings) config(dataDir string, clientPort int, peers []zklaunch.Peer) zklaunch.Config {
	return zklaunch.Config{
		TickTime:          st.tick,
		MinSessionTimeout: st.minSession,
		MaxSessionTimeout: st.maxSession,
		DataDir:           dataDir,
		ClientPort:        clientPort,
		Peers:             peers,
		SyncLimit:         st.syncLimit,
	}
}
