package zkserver

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// JarEnv names the environment variable that, when set, names the
// ZooKeeper server jar to run (see [Jar]) when no [Jar] option is given.
const JarEnv = "ZKALLOC_ZOOKEEPER_JAR"

// Bounds on a start. Generous: a loaded CI machine starting several JVMs
// at once is slow.
const (
	standaloneTimeout = 60 * time.Second
	ensembleTimeout   = 90 * time.Second
)

// Option configures [Start] and [StartEnsemble].
type Option func(*settings)

type settings struct {
	jar      string
	required bool
	log      io.Writer
}

// Jar runs the ZooKeeper server jar at path instead of Debian's. A jar
// whose manifest lists its dependencies (Class-Path, as Debian's does)
// runs alone; any other jar runs with the jars of its own directory, as
// in the lib/ directory of an Apache ZooKeeper release
// (apache-zookeeper-3.9.3-bin/lib/zookeeper-3.9.3.jar). It takes
// precedence over [JarEnv].
func Jar(path string) Option {
	return func(s *settings) { s.jar = path }
}

// Required fails the test, rather than skipping it, when Java or
// ZooKeeper is missing. Under CI (the environment variable CI is true) a
// missing ZooKeeper always fails the test.
func Required() Option {
	return func(s *settings) { s.required = true }
}

// Log also copies the servers' output (ZooKeeper's log at INFO level) to
// w, each line prefixed with the server's name. Writes to w are
// serialized and their errors ignored. Without it the output goes only to
// files that are removed with the servers; the tail of each is logged
// when the test fails.
func Log(w io.Writer) Option {
	return func(s *settings) { s.log = w }
}

// Server is a running ZooKeeper: one standalone server or an ensemble.
// Its methods are safe for concurrent use.
type Server struct {
	servers []string
	close   func() error
	once    sync.Once
	err     error // close's result, set once
}

// Start starts a standalone ZooKeeper server for the test and returns
// once it serves clients. The server is stopped and its files removed when
// the test ends (tb.Cleanup), or earlier by [Server.Stop]; if the test
// failed, the tail of the server's log is logged first.
//
// If Java or ZooKeeper is missing, Start skips the test (see [Required]).
// Any other failure to start fails it. Call Start from the test's
// goroutine.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	st, lopts := options(opts)
	ctx, cancel := context.WithTimeout(context.Background(), standaloneTimeout)
	defer cancel()
	srv, err := startServer(ctx, st, lopts)
	if err != nil {
		failStart(tb, st, err)
	}
	return register(tb, []string{srv.Addr()}, srv.Close, srv.Tail)
}

// StartEnsemble starts an ensemble of n ZooKeeper servers (3 is typical)
// for the test and returns once all of them serve under one leader. It
// stops them as [Start] does, and skips or fails the test as Start does.
// Call StartEnsemble from the test's goroutine.
func StartEnsemble(tb testing.TB, n int, opts ...Option) *Server {
	tb.Helper()
	st, lopts := options(opts)
	ctx, cancel := context.WithTimeout(context.Background(), ensembleTimeout)
	defer cancel()
	e, err := startEnsemble(ctx, n, st, lopts)
	if err != nil {
		failStart(tb, st, err)
	}
	return register(tb, e.Addrs(), e.Close, e.Tail)
}

// Servers returns the servers' client addresses, "127.0.0.1:port", one
// per server: what zkalloc.Config.Servers takes. The slice is a copy.
func (s *Server) Servers() []string {
	return append([]string(nil), s.servers...)
}

// Stop kills the servers, as a crash would, and removes their files.
// Clients then lose their connection. Later calls do nothing and return
// the first call's result.
func (s *Server) Stop() error {
	s.once.Do(func() { s.err = s.close() })
	return s.err
}

func options(opts []Option) (settings, zklaunch.Options) {
	var st settings
	for _, o := range opts {
		o(&st)
	}
	if st.jar == "" {
		st.jar = os.Getenv(JarEnv)
	}
	return st, zklaunch.Options{Log: st.log}
}

// install sets lopts.Install to the jar's, if one is named.
func install(st settings, lopts *zklaunch.Options) error {
	if st.jar == "" {
		return nil // zklaunch finds Debian's
	}
	inst, err := zklaunch.JarInstall(st.jar)
	if err != nil {
		return err
	}
	lopts.Install = &inst
	return nil
}

func startServer(ctx context.Context, st settings, lopts zklaunch.Options) (*zklaunch.Server, error) {
	if err := install(st, &lopts); err != nil {
		return nil, err
	}
	return zklaunch.StartServer(ctx, lopts)
}

func startEnsemble(ctx context.Context, n int, st settings, lopts zklaunch.Options) (*zklaunch.Ensemble, error) {
	if err := install(st, &lopts); err != nil {
		return nil, err
	}
	return zklaunch.StartEnsemble(ctx, n, lopts)
}

// register returns the Server and registers its cleanup.
func register(tb testing.TB, servers []string, closeFn func() error, tail func() string) *Server {
	s := &Server{servers: servers, close: closeFn}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("zkserver: log tail of %v:\n%s", servers, tail())
		}
		if err := s.Stop(); err != nil {
			tb.Errorf("zkserver: stop: %v", err)
		}
	})
	return s
}

// failStart ends the test after a failed start: a skip when Java or
// ZooKeeper is missing and a skip is allowed, a failure otherwise.
func failStart(tb testing.TB, st settings, err error) {
	tb.Helper()
	if !errors.Is(err, zklaunch.ErrNotInstalled) {
		tb.Fatalf("zkserver: %v", err)
	}
	const hint = "install Java and ZooKeeper (Debian and Ubuntu: apt-get install zookeeper), or set " +
		JarEnv + " to a ZooKeeper server jar"
	switch {
	case st.required:
		tb.Fatalf("zkserver: %v: %s (zkserver.Required: not skipping)", err, hint)
	case onCI():
		tb.Fatalf("zkserver: %v: %s (CI=true: not skipping)", err, hint)
	}
	tb.Skipf("zkserver: %v: %s; skipping (with CI=true or zkserver.Required() this fails)", err, hint)
}

// onCI reports whether the environment variable CI holds a true value, as
// CI services set it.
func onCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}
