package record

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// DefaultStep is the default [Config].Step: how much longer each member
// in the order of who computes waits than the one before it.
const DefaultStep = 20 * time.Millisecond

// maxMultiBytes bounds one multi's payload: jute.maxbuffer (1 MiB by
// default) less a margin for the request's framing. A record whose new
// shares and head together exceed it is written in several requests
// (see [Runner.write]).
const maxMultiBytes = 900_000

// Config configures a [Runner]. Paths, Member and Session are required;
// the zero value of every other field means its documented default.
type Config struct {
	// Paths are the group's node paths; the record is at
	// Paths.Assignment().
	Paths zkpath.Group
	// Member is this member's name.
	Member string
	// ACL is given to the nodes the runner creates: the head, the share
	// nodes and any missing parent. Nil means world-all.
	ACL []zk.ACL
	// Session is the runner's own subscription to the session's states
	// (zksession.Session.Subscribe), as each I/O actor has its own.
	Session *actor.Latest[zksession.State]
	// Logger receives the runner's logs; nil discards them.
	Logger *slog.Logger
	// Clock times the stagger and the retries; nil is the real clock.
	Clock actor.Clock
	// Step is the stagger between ranks (see [Runner.Assign]); 0 means
	// [DefaultStep].
	Step time.Duration
}

// counts is what a [Runner] has written since [New]: the records it
// wrote (compare-and-sets of the head that succeeded), and those it
// computed but did not write, because another member's write changed
// the head first. [Runner.RecordCounts] reads them.
type counts struct {
	writes, failedCAS atomic.Uint64
}

// Runner runs the sticky strategy's jobs over the group's agreed
// assignment record: see [Runner.Assign]. Between calls it keeps the
// session state, the last head read with its watch, the share data read
// or written by node name (share nodes never change), and the placement
// of the last record it decoded or wrote.
//
// Assign must not be called concurrently; [Runner.RecordCounts] may be called
// from any goroutine.
type Runner struct {
	cfg        Config
	log        *slog.Logger
	multiBytes int // maxMultiBytes, smaller in tests to force the split path

	st zksession.State // the session state last taken

	// The head as last read: present is false when there is no head node;
	// head is nil when there is none or its data could not be decoded
	// (empty, or of another format), and then a writer bootstraps over
	// it. watch is the watch armed on it (GetW, or ExistsW when absent),
	// nil once it has fired or the connection changed. reread asks the
	// next readHead to read it even while the watch has not fired.
	present  bool
	version  int32
	mzxid    int64
	headData []byte
	head     *assignment.Head
	watch    <-chan zk.Event
	reread   bool
	newer    bool // the head is of a later format than this version reads

	// data is the share nodes' data by node name: only nodes the head
	// last read names are kept.
	data map[string][]byte
	// mine is this member's share as last decoded, by node name.
	mineNode string
	mine     []rebalance.Partition
	// placement is the placement of the record whose head's data is
	// placementOf: the one this member last wrote or decoded, so that a
	// member that computes twice in a row decodes nothing.
	placement   rebalance.Placement
	placementOf []byte

	// after is the work the last write left to do off its caller's path
	// (see [Runner.startAfter]); nil when there is none, or once taken.
	after *afterWrite

	warned map[string]bool // the kinds of error already logged at WARN
	counts counts
}

// New returns a runner. It starts nothing and does no I/O. It panics if
// Paths, Member or Session is missing.
func New(cfg Config) *Runner {
	switch {
	case cfg.Paths.Group == "":
		panic("record: New: Config.Paths is required")
	case cfg.Member == "":
		panic("record: New: Config.Member is required")
	case cfg.Session == nil:
		panic("record: New: Config.Session is required")
	}
	if len(cfg.ACL) == 0 {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	if cfg.Step <= 0 {
		cfg.Step = DefaultStep
	}
	return &Runner{
		cfg:        cfg,
		log:        cfg.Logger.With("member", cfg.Member),
		multiBytes: maxMultiBytes,
		data:       make(map[string][]byte),
		warned:     make(map[string]bool),
	}
}

// RecordCounts returns the records the runner has written since [New],
// and those it computed but lost to another member's write (seam.Assigner
// asks for them, for Stats). It is safe for concurrent use.
func (r *Runner) RecordCounts() (writes, conflicts uint64) {
	return r.counts.writes.Load(), r.counts.failedCAS.Load()
}
