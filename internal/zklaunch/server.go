package zklaunch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// bindAttempts is how many fresh ports StartServer tries when the server
// loses a race for its port.
const bindAttempts = 5

// Options configures [StartServer]. The zero value is ready to use.
type Options struct {
	// Config is the server's zoo.cfg; StartServer sets its DataDir and
	// ClientPort, and it must have no Peers.
	Config Config
	// Dir is the directory in which the server's own directory (zoo.cfg,
	// data directory and log file) is created. Empty means a new
	// temporary directory, removed by Close. When Dir is set, Close
	// leaves the files in place so that they can be inspected.
	Dir string
	// Log, if not nil, also receives the server's output, each line
	// prefixed with the server's name, "zk-<port>" (see [JVM.Log]).
	Log io.Writer
	// DefaultJVM runs the server with the JVM's own defaults (see
	// [JVM.Default]).
	DefaultJVM bool
	// Install, if not nil, is the java and classpath to run; nil means
	// [FindInstall]'s.
	Install *Install
}

// install returns o.Install, or FindInstall's.
func (o Options) install() (Install, error) {
	if o.Install != nil {
		return *o.Install, nil
	}
	return FindInstall()
}

// Server is one standalone ZooKeeper server (ZooKeeperServerMain)
// listening on a loopback port. It can be stopped, killed and started
// again on the same address and data directory.
//
// A Server is safe for concurrent use; its methods are serialized, so one
// waits while another is starting or stopping the server.
type Server struct {
	inst      Install
	jvm       JVM
	dir       string // the server's own directory: zoo.cfg, data/, zookeeper.log
	removeDir bool   // dir is a temporary directory, removed by Close
	addr      string // set by StartServer before it returns; fixed afterwards

	mu     sync.Mutex
	proc   *Process // the latest process, running or not; nil before the first
	closed bool
}

// StartServer starts a standalone server on a free 127.0.0.1 port, with
// its files in a new directory (see [Options.Dir]), and returns once the
// server answers `ruok` with `imok` and serves clients (`srvr` reports
// "Mode: standalone"; until then it drops client connections). If
// another process takes the port first, it retries on a new port a few
// times.
//
// ctx bounds the start; without a deadline, two minutes apply. On failure
// the error includes the tail of the server's log; it wraps
// [ErrNotInstalled] when ZooKeeper is not installed and [ErrExited] when
// the server exited on its own. The caller must Close the returned Server.
func StartServer(ctx context.Context, opts Options) (*Server, error) {
	if opts.Config.Peers != nil {
		return nil, errors.New("zklaunch: StartServer: Config.Peers set: a standalone server has none")
	}
	inst, err := opts.install()
	if err != nil {
		return nil, err
	}
	dir, err := MakeDir(opts.Dir, "zklaunch-server-")
	if err != nil {
		return nil, err
	}
	s := &Server{inst: inst, jvm: JVM{Default: opts.DefaultJVM, Log: opts.Log}, dir: dir, removeDir: opts.Dir == ""}
	ctx, cancel := WithDefaultDeadline(ctx, DefaultWait)
	defer cancel()

	cfg := opts.Config
	cfg.DataDir = filepath.Join(dir, "data")
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(1)
		if err != nil {
			_ = s.Close() // the error returned says what failed
			return nil, err
		}
		s.addr = HostPort(ports[0])
		s.jvm.Name = "zk-" + strconv.Itoa(ports[0])
		cfg.ClientPort = ports[0]
		if err := cfg.Write(dir); err != nil {
			_ = s.Close() // the error returned says what failed
			return nil, err
		}
		s.mu.Lock()
		err = s.startLocked(ctx)
		retry := err != nil && s.proc != nil && s.proc.BindFailed() && attempt < bindAttempts
		s.mu.Unlock()
		switch {
		case err == nil:
			return s, nil
		case !retry:
			_ = s.Close() // the error returned says what failed
			return nil, err
		}
	}
}

// MakeDir creates a new directory in parent (or in the system's temporary
// directory if parent is empty) and returns its absolute path with
// symbolic links resolved, as a server's JVM reports it in `envi`.
func MakeDir(parent, pattern string) (string, error) {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", fmt.Errorf("zklaunch: create server directory: %w", err)
	}
	resolved, err := filepath.Abs(dir)
	if err == nil {
		resolved, err = filepath.EvalSymlinks(resolved)
	}
	if err != nil {
		_ = os.RemoveAll(dir) // best effort: the error returned says what failed
		return "", fmt.Errorf("zklaunch: create server directory: %w", err)
	}
	return resolved, nil
}

// Addr returns the server's client address, "127.0.0.1:port". It stays the
// same across Stop and Start. Addr is safe for concurrent use and does not
// wait for other methods.
func (s *Server) Addr() string {
	return s.addr
}

// Start starts the server again after Stop or Kill, on the same port and
// data directory: sessions that have not timed out meanwhile survive, as
// with a real restart. It returns once the server serves again, and does
// nothing if the server is running. ctx bounds the start (two minutes if
// it has no deadline); on failure the server is left stopped and the error
// quotes its log. Start is safe for concurrent use.
func (s *Server) Start(ctx context.Context) error {
	ctx, cancel := WithDefaultDeadline(ctx, DefaultWait)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(ctx)
}

// startLocked starts the process unless it is running and waits until it
// is ready. On failure it kills the process but keeps s.proc for its log.
func (s *Server) startLocked(ctx context.Context) error {
	if s.closed {
		return ErrClosed
	}
	if s.proc != nil && !s.proc.Exited() {
		return nil
	}
	p, err := StartProcess(s.inst, s.dir, false, s.jvm)
	if err != nil {
		return err
	}
	s.proc = p
	if err := p.WaitReady(ctx, s.addr, true); err != nil {
		err = p.Describe(s.jvm.Name, fmt.Errorf("zklaunch: start %s: %w", s.addr, err))
		return errors.Join(err, p.Stop(syscall.SIGKILL))
	}
	return nil
}

// Stop stops the server with SIGTERM, as an operator would, and waits for
// it to exit (killing it if it takes more than 10 s). Its files are kept
// for Start. Stopping a stopped server does nothing. Stop is safe for
// concurrent use.
func (s *Server) Stop() error {
	return s.halt(syscall.SIGTERM)
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit. Its files are kept for Start. Killing a stopped server does
// nothing. Kill is safe for concurrent use.
func (s *Server) Kill() error {
	return s.halt(syscall.SIGKILL)
}

func (s *Server) halt(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	return s.proc.Stop(sig)
}

// Running reports whether the server process is running (it may not be
// ready yet, or may have exited a moment ago). Running is safe for
// concurrent use.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.Exited()
}

// Close kills the server if it is running and removes its temporary
// directory (a directory under a caller's [Options.Dir] is kept). Later
// calls do nothing and return nil; other methods then return [ErrClosed]
// or do nothing. Close is safe for concurrent use.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.proc != nil {
		err = s.proc.Stop(syscall.SIGKILL)
	}
	if s.removeDir {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// Tail returns the tail of the latest server process's log, or "" if none
// started. Tail is safe for concurrent use.
func (s *Server) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.Tail()
}
