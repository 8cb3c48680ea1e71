package zklaunch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultSyncLimit is an ensemble's syncLimit when [Config.SyncLimit] is
// zero.
const DefaultSyncLimit = 5

// Ensemble is an ensemble of quorum peers (QuorumPeerMain) on loopback
// ports, started together by [StartEnsemble] and stopped together by
// [Ensemble.Close]. (The test workshop's ensemble, internal/zktest, also
// stops, restarts and cuts off single members.)
//
// An Ensemble is safe for concurrent use.
type Ensemble struct {
	inst      Install
	dir       string // parent of the members' directories
	removeDir bool
	addrs     []string // set by StartEnsemble before it returns; fixed afterwards

	mu     sync.Mutex
	procs  []*Process // the members' processes, in member order; nil before launch
	names  []string
	closed bool
}

// StartEnsemble starts an ensemble of n members (n ≥ 1) on free 127.0.0.1
// ports, with their files in a new directory (see [Options.Dir]), and
// returns once every member serves under one leader: one member reports
// "Mode: leader" in `srvr` and the others "Mode: follower". If another
// process takes one of the ports first, it starts over on new ports a
// few times. opts.Config gives the members' settings; StartEnsemble sets
// their DataDir, ClientPort and Peers, and a zero SyncLimit means
// [DefaultSyncLimit].
//
// ctx bounds the start; without a deadline, two minutes apply. On failure
// the error includes the tail of each member's log; it wraps
// [ErrNotInstalled] when ZooKeeper is not installed. The caller must
// Close the returned Ensemble.
func StartEnsemble(ctx context.Context, n int, opts Options) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zklaunch: ensemble size %d: want at least 1", n)
	}
	if opts.Config.Peers != nil {
		return nil, errors.New("zklaunch: StartEnsemble: Config.Peers set: StartEnsemble chooses them")
	}
	inst, err := opts.install()
	if err != nil {
		return nil, err
	}
	dir, err := MakeDir(opts.Dir, "zklaunch-ensemble-")
	if err != nil {
		return nil, err
	}
	e := &Ensemble{inst: inst, dir: dir, removeDir: opts.Dir == ""}
	ctx, cancel := WithDefaultDeadline(ctx, DefaultWait)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := e.launch(ctx, n, opts)
		if err == nil {
			err = e.waitServing(ctx)
		}
		if err == nil {
			return e, nil
		}
		e.mu.Lock()
		retry := attempt < bindAttempts && e.bindFailedLocked()
		if !retry {
			err = e.describeLocked(fmt.Errorf("zklaunch: start ensemble: %w", err))
		}
		killErr := e.killLocked()
		e.mu.Unlock()
		if !retry || killErr != nil {
			return nil, errors.Join(err, killErr, e.Close())
		}
	}
}

// launch picks ports, writes every member's files, starts them all and
// waits until each answers `ruok`.
func (e *Ensemble) launch(ctx context.Context, n int, opts Options) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	ports, err := pickPorts(3 * n)
	if err != nil {
		return err
	}
	peers := make([]Peer, n)
	for i := range peers {
		peers[i] = Peer{ID: i + 1, PeerPort: ports[3*i+1], ElectionPort: ports[3*i+2]}
	}
	e.procs = make([]*Process, n)
	e.names = make([]string, n)
	e.addrs = make([]string, n)
	jvm := JVM{Default: opts.DefaultJVM, Log: opts.Log}
	for i := range n {
		cfg := opts.Config
		cfg.ClientPort = ports[3*i]
		cfg.Peers = peers
		if cfg.SyncLimit == 0 {
			cfg.SyncLimit = DefaultSyncLimit
		}
		mdir := filepath.Join(e.dir, "zk"+strconv.Itoa(i+1))
		cfg.DataDir = filepath.Join(mdir, "data")
		if err := WriteMember(mdir, cfg, i+1); err != nil {
			return err
		}
		e.names[i] = fmt.Sprintf("zk%d-%d", i+1, cfg.ClientPort)
		e.addrs[i] = HostPort(cfg.ClientPort)
		jvm.Name = e.names[i]
		p, err := StartProcess(e.inst, mdir, true, jvm)
		if err != nil {
			return err
		}
		e.procs[i] = p
	}
	for i, p := range e.procs {
		if err := p.WaitReady(ctx, e.addrs[i], false); err != nil {
			return fmt.Errorf("%s: %w", e.names[i], err)
		}
	}
	return nil
}

// WriteMember (re)creates an ensemble member's directory dir: its zoo.cfg
// from cfg, and cfg.DataDir with the member's myid, id.
func WriteMember(dir string, cfg Config, id int) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("zklaunch: member directory: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("zklaunch: member directory: %w", err)
	}
	if err := cfg.Write(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("zklaunch: write myid: %w", err)
	}
	return nil
}

// waitServing polls the members' modes until [AllServing] holds. A
// member that exits or fails to bind its ports fails it at once.
func (e *Ensemble) waitServing(ctx context.Context) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		e.mu.Lock()
		procs := e.procs
		e.mu.Unlock()
		modes := make([]string, len(procs))
		for i, p := range procs {
			switch {
			case p.Exited():
				return fmt.Errorf("%s: %w", e.names[i], ErrExited)
			case p.BindFailed():
				return fmt.Errorf("%s: could not bind its ports", e.names[i])
			}
			modes[i], _ = Mode(ctx, e.addrs[i])
		}
		if AllServing(modes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zklaunch: ensemble modes %q: %w", modes, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// SoleLeader returns the index of the only [ModeLeader] in modes (as
// [Mode] reports them, one per member), or -1 if there is none or more
// than one.
func SoleLeader(modes []string) int {
	leader := -1
	for i, m := range modes {
		if m == ModeLeader {
			if leader >= 0 {
				return -1
			}
			leader = i
		}
	}
	return leader
}

// AllServing reports whether modes show every member serving under one
// leader: one [ModeLeader], the others [ModeFollower].
func AllServing(modes []string) bool {
	if SoleLeader(modes) < 0 {
		return false
	}
	for _, m := range modes {
		if m != ModeLeader && m != ModeFollower {
			return false
		}
	}
	return true
}

func (e *Ensemble) bindFailedLocked() bool {
	for _, p := range e.procs {
		if p != nil && p.BindFailed() {
			return true
		}
	}
	return false
}

// describeLocked joins err with the log tail of every member.
func (e *Ensemble) describeLocked(err error) error {
	errs := []error{err}
	for i, p := range e.procs {
		if p != nil {
			errs = append(errs, p.Describe(e.names[i], errors.New("log")))
		}
	}
	return errors.Join(errs...)
}

// killLocked kills every member, all at once, and waits for them to exit.
func (e *Ensemble) killLocked() error {
	for _, p := range e.procs {
		if p != nil {
			p.Signal(syscall.SIGKILL)
		}
	}
	var errs []error
	for _, p := range e.procs {
		if p != nil {
			errs = append(errs, p.Stop(syscall.SIGKILL))
		}
	}
	return errors.Join(errs...)
}

// Addrs returns the members' client addresses ("127.0.0.1:port") in member
// order. The slice is a copy. Addrs is safe for concurrent use.
func (e *Ensemble) Addrs() []string {
	return append([]string(nil), e.addrs...)
}

// Tail returns the tail of each member's log, each headed by the
// member's name, for test failure reports. Tail is safe for concurrent
// use.
func (e *Ensemble) Tail() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for i, p := range e.procs {
		if p != nil {
			fmt.Fprintf(&b, "%s:\n%s\n", e.names[i], p.Tail())
		}
	}
	return b.String()
}

// Close kills every member and removes the ensemble's temporary directory
// (a directory under a caller's [Options.Dir] is kept). Later calls do
// nothing and return nil. Close is safe for concurrent use.
func (e *Ensemble) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.killLocked()
	if e.removeDir {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}
