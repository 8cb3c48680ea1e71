package zktest

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// Bounds on the helpers' starts. Generous: a loaded CI machine starting
// several JVMs at once is slow.
const (
	standaloneStartTimeout = 60 * time.Second
	ensembleStartTimeout   = 90 * time.Second
)

// Standalone starts a standalone server for a test, as [StartServer] does,
// and registers a cleanup that quotes the server's log if the test failed
// and then closes the server.
//
// If ZooKeeper is not installed, the test is skipped with a hint to run
// scripts/install-zookeeper.sh; but under CI (the environment variable CI
// is true) it fails instead, so that a broken CI setup cannot pass by
// skipping. Any other start error fails the test. Call Standalone from the
// test's goroutine.
func Standalone(tb testing.TB, opts Options) *zklaunch.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), standaloneStartTimeout)
	defer cancel()
	s, err := StartServer(ctx, opts)
	if err != nil {
		failStart(tb, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("zktest: server %s log tail:\n%s", s.Addr(), s.Tail())
		}
		if err := s.Close(); err != nil {
			tb.Errorf("zktest: close server: %v", err)
		}
	})
	return s
}

// NewEnsemble starts an ensemble of n members for a test, as
// [StartEnsemble] does, and registers a cleanup that quotes the members'
// logs if the test failed and then closes the ensemble. Like [Standalone],
// it skips the test when ZooKeeper is not installed, except under CI. Call
// NewEnsemble from the test's goroutine.
func NewEnsemble(tb testing.TB, n int, opts Options) *Ensemble {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ensembleStartTimeout)
	defer cancel()
	e, err := StartEnsemble(ctx, n, opts)
	if err != nil {
		failStart(tb, err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("zktest: ensemble log tails:\n%s", strings.Join(e.logTails(), "\n"))
		}
		if err := e.Close(); err != nil {
			tb.Errorf("zktest: close ensemble: %v", err)
		}
	})
	return e
}

// StartProxy starts a [Proxy] to targets for a test and registers a cleanup
// that closes it. It fails the test if the proxy cannot listen. Call
// StartProxy from the test's goroutine.
func StartProxy(tb testing.TB, targets ...string) *Proxy {
	tb.Helper()
	p, err := NewProxy(targets...)
	return closeAtCleanup(tb, p, err)
}

// closeAtCleanup fails the test if err is not nil, and otherwise
// registers a cleanup that closes p.
func closeAtCleanup(tb testing.TB, p *Proxy, err error) *Proxy {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("zktest: close proxy: %v", err)
		}
	})
	return p
}

// failStart ends the test after a failed start: a skip when ZooKeeper is
// missing on a developer's machine, a failure otherwise.
func failStart(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, zklaunch.ErrNotInstalled) && !OnCI() {
		tb.Skipf("%v (run scripts/install-zookeeper.sh; skipping: outside CI; under CI=true this fails)", err)
	}
	tb.Fatal(err)
}

// OnCI reports whether the environment variable CI holds a true value
// ("true", "1"...), as CI services set it. Tests then must not skip for
// want of ZooKeeper. OnCI is safe for concurrent use.
func OnCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}
