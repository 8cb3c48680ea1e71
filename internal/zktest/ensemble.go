package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// Ensemble is a ZooKeeper ensemble: n quorum peers (QuorumPeerMain) on
// loopback ports. Members are numbered from 0 (their ZooKeeper myid is the
// index plus one); each can be stopped, killed and started again on the
// same ports and data directory.
//
// An Ensemble is safe for concurrent use. Methods that start or stop
// members are serialized; [Ensemble.Leader] and [Ensemble.WaitServing] poll
// without blocking them.
type Ensemble struct {
	inst      zklaunch.Install
	settings  settings
	dir       string // parent of the members' directories
	removeDir bool
	addrs     []string // set by StartEnsemble before it returns; fixed afterwards

	mu      sync.Mutex
	members []*member // fixed length n
	// proxies[i][j] carries member i's connections to member j's peer
	// port, and eproxies[i][j] those to its election port, with
	// [Options.QuorumProxies]; nil otherwise, and on the diagonal. Set by
	// launch; closed by Close.
	proxies, eproxies [][]*Proxy
	closed            bool
}

// Ports of a new ensemble: pickPorts chooses them (tests replace it to
// stage a lost port race), and StartEnsemble starts over on new ones up
// to bindAttempts times when a member loses a race for one.
var pickPorts = zklaunch.FreePorts

const bindAttempts = 5

// member is one quorum peer. Its fields are guarded by Ensemble.mu; the
// ports and dir are set by launch and fixed afterwards.
type member struct {
	name         string
	dir          string
	clientPort   int
	peerPort     int
	electionPort int
	proc         *zklaunch.Process // the latest process; nil before the first
}

func (m *member) addr() string  { return zklaunch.HostPort(m.clientPort) }
func (m *member) running() bool { return m.proc != nil && !m.proc.Exited() }
func (m *member) describe(err error) error {
	if m.proc == nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return m.proc.Describe(m.name, err)
}

// StartEnsemble starts an ensemble of n members (n ≥ 1; 3 is typical) on
// free 127.0.0.1 ports, with their files in a new directory (see
// [Options.Dir]). It returns once every member answers `ruok` and they have
// elected a leader: exactly one member reports "Mode: leader" in `srvr` and
// all the others "Mode: follower". If another process takes one of the
// ports first, it starts over on new ports a few times.
//
// ctx bounds the start; without a deadline, two minutes apply. On failure
// the error includes the tail of each member's log; it wraps
// [zklaunch.ErrNotInstalled] when ZooKeeper is not installed. The caller must Close
// the returned Ensemble.
func StartEnsemble(ctx context.Context, n int, opts Options) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zktest: ensemble size %d: want at least 1", n)
	}
	st, err := opts.validate()
	if err != nil {
		return nil, err
	}
	inst, err := zklaunch.FindInstall()
	if err != nil {
		return nil, err
	}
	dir, err := zklaunch.MakeDir(st.dir, "zktest-ensemble-")
	if err != nil {
		return nil, err
	}
	e := &Ensemble{inst: inst, settings: st, dir: dir, removeDir: st.dir == "", members: make([]*member, n)}
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, zklaunch.DefaultWait)
	defer cancel()

	for attempt := 1; ; attempt++ {
		err := e.launch(ctx)
		if err == nil {
			err = e.waitFor(ctx, true, zklaunch.AllServing)
		}
		if err == nil {
			e.addrs = make([]string, n)
			for i, m := range e.members {
				e.addrs[i] = m.addr()
			}
			return e, nil
		}
		e.mu.Lock()
		retry := attempt < bindAttempts && e.bindFailedLocked()
		if !retry {
			err = e.describeLocked(fmt.Errorf("zktest: start ensemble: %w", err))
		}
		e.mu.Unlock()
		if !retry {
			return nil, errors.Join(err, e.Close())
		}
		if err := e.haltAll(syscall.SIGKILL); err != nil {
			return nil, errors.Join(err, e.Close())
		}
	}
}

// launch picks ports, writes every member's files and starts them all,
// then waits until each answers `ruok`.
func (e *Ensemble) launch(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.members)
	ports, err := pickPorts(3 * n)
	if err != nil {
		return err
	}
	peers := make([]zklaunch.Peer, n)
	for i := range peers {
		peers[i] = zklaunch.Peer{ID: i + 1, PeerPort: ports[3*i+1], ElectionPort: ports[3*i+2]}
	}
	if err := e.proxyLocked(peers); err != nil {
		return err
	}
	for i := range e.members {
		m := &member{
			name:         fmt.Sprintf("zk%d-%d", i+1, ports[3*i]),
			dir:          filepath.Join(e.dir, "zk"+strconv.Itoa(i+1)),
			clientPort:   ports[3*i],
			peerPort:     peers[i].PeerPort,
			electionPort: peers[i].ElectionPort,
		}
		e.members[i] = m
		cfg := e.settings.config(filepath.Join(m.dir, "data"), m.clientPort, e.peersOfLocked(i, peers))
		if err := zklaunch.WriteMember(m.dir, cfg, i+1); err != nil {
			return err
		}
	}
	for i := range e.members {
		if err := e.startProcessLocked(i); err != nil {
			return err
		}
	}
	for i := range e.members {
		if err := e.waitReadyLocked(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// startProcessLocked starts member i's process unless it is running.
func (e *Ensemble) startProcessLocked(i int) error {
	m := e.members[i]
	if m.running() {
		return nil
	}
	p, err := zklaunch.StartProcess(e.inst, m.dir, true, zklaunch.JVM{Default: e.settings.defaultJVM, Log: e.settings.log, Name: m.name})
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

// waitReadyLocked waits until member i answers `ruok`.
func (e *Ensemble) waitReadyLocked(ctx context.Context, i int) error {
	m := e.members[i]
	if err := m.proc.WaitReady(ctx, m.addr(), false); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}

func (e *Ensemble) bindFailedLocked() bool {
	for _, m := range e.members {
		if m != nil && m.proc != nil && m.proc.BindFailed() {
			return true
		}
	}
	return false
}

// describeLocked joins err with the log tail of every member.
func (e *Ensemble) describeLocked(err error) error {
	errs := []error{err}
	for _, m := range e.members {
		if m != nil && m.proc != nil {
			errs = append(errs, m.describe(errors.New("log")))
		}
	}
	return errors.Join(errs...)
}

// Addrs returns the members' client addresses ("127.0.0.1:port") in member
// order. They stay the same across Stop and Start. The slice is a copy.
// Addrs is safe for concurrent use and does not wait for other methods.
func (e *Ensemble) Addrs() []string {
	return append([]string(nil), e.addrs...)
}

// Stop stops member i with SIGTERM and waits for it to exit (killing it if
// it takes more than 10 s). Stopping a stopped member does nothing. Stop is
// safe for concurrent use.
func (e *Ensemble) Stop(i int) error {
	return e.halt(i, syscall.SIGTERM)
}

// Kill kills member i with SIGKILL and waits for it to exit. Killing a
// stopped member does nothing. Kill is safe for concurrent use.
func (e *Ensemble) Kill(i int) error {
	return e.halt(i, syscall.SIGKILL)
}

func (e *Ensemble) halt(i int, sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(i); err != nil {
		return err
	}
	if m := e.members[i]; m.running() {
		return m.proc.Stop(sig)
	}
	return nil
}

// Start starts member i again on its ports and data directory and returns
// once it answers `ruok`; it rejoins the quorum a moment later (see
// [Ensemble.WaitServing]). Starting a running member does nothing. ctx
// bounds the start (two minutes if it has no deadline); on failure the
// member is left stopped and the error quotes its log. Start is safe for
// concurrent use.
func (e *Ensemble) Start(ctx context.Context, i int) error {
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, zklaunch.DefaultWait)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(i); err != nil {
		return err
	}
	if err := e.startLocked(ctx, i); err != nil {
		return e.members[i].describe(err)
	}
	return nil
}

func (e *Ensemble) startLocked(ctx context.Context, i int) error {
	m := e.members[i]
	if m.running() {
		return nil
	}
	if err := e.startProcessLocked(i); err != nil {
		return err
	}
	if err := e.waitReadyLocked(ctx, i); err != nil {
		return errors.Join(err, m.proc.Stop(syscall.SIGKILL))
	}
	return nil
}

func (e *Ensemble) checkLocked(i int) error {
	if e.closed {
		return zklaunch.ErrClosed
	}
	if i < 0 || i >= len(e.members) {
		return fmt.Errorf("zktest: ensemble member %d: want 0 to %d", i, len(e.members)-1)
	}
	return nil
}

// StopAll stops every running member with SIGTERM, all at once, and waits
// for them to exit. StopAll is safe for concurrent use.
func (e *Ensemble) StopAll() error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return zklaunch.ErrClosed
	}
	return e.haltAll(syscall.SIGTERM)
}

func (e *Ensemble) haltAll(sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var running []*zklaunch.Process
	for _, m := range e.members {
		if m != nil && m.running() {
			m.proc.Signal(sig)
			running = append(running, m.proc)
		}
	}
	var errs []error
	for _, p := range running {
		errs = append(errs, p.Stop(sig))
	}
	return errors.Join(errs...)
}

// StartAll starts every stopped member, all at once, and returns once the
// whole ensemble serves: every member answers and exactly one is the
// leader, as after [StartEnsemble]. ctx bounds it (two minutes if it has no
// deadline). StartAll is safe for concurrent use.
func (e *Ensemble) StartAll(ctx context.Context) error {
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, zklaunch.DefaultWait)
	defer cancel()
	err := e.startAll(ctx)
	if err == nil {
		err = e.waitFor(ctx, true, zklaunch.AllServing)
	}
	if err != nil && !errors.Is(err, zklaunch.ErrClosed) {
		e.mu.Lock()
		err = e.describeLocked(err)
		e.mu.Unlock()
	}
	return err
}

// startAll starts the stopped members and waits until each answers `ruok`.
// On failure it kills those it started.
func (e *Ensemble) startAll(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return zklaunch.ErrClosed
	}
	var started []int
	err := func() error {
		for i, m := range e.members {
			if m.running() {
				continue
			}
			if err := e.startProcessLocked(i); err != nil {
				return err
			}
			started = append(started, i)
		}
		for _, i := range started {
			if err := e.waitReadyLocked(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		for _, i := range started {
			err = errors.Join(err, e.members[i].proc.Stop(syscall.SIGKILL))
		}
	}
	return err
}

// Close kills every member and removes the ensemble's temporary directory
// (a directory under a caller's [Options.Dir] is kept). Later calls do
// nothing and return nil; other methods then return [zklaunch.ErrClosed]. Close is
// safe for concurrent use.
func (e *Ensemble) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	err := e.haltAll(syscall.SIGKILL)
	e.mu.Lock()
	err = errors.Join(err, e.closeProxiesLocked())
	e.mu.Unlock()
	if e.removeDir {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// logTails returns each member's log tail, for test failure reports.
func (e *Ensemble) logTails() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	tails := make([]string, len(e.members))
	for i, m := range e.members {
		if m != nil && m.proc != nil {
			tails[i] = m.name + ":\n" + m.proc.Tail()
		}
	}
	return tails
}
