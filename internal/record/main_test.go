package record

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// The package's tests share one ZooKeeper server, each test in a group of
// its own: starting a JVM per test would cost more than the tests. It
// starts on first use, so that the pure tests run without it, and stops
// after the last test, before goleak looks for goroutines left over.
func TestMain(m *testing.M) { goleak.VerifyTestMain(serverMain{m}) }

type serverMain struct{ m *testing.M }

func (s serverMain) Run() int {
	code := s.m.Run()
	if shared.srv != nil {
		if err := shared.srv.Close(); err != nil && code == 0 {
			code = 1
		}
	}
	return code
}

var shared struct {
	once sync.Once
	srv  *zklaunch.Server
	err  error
}

// Server returns the address of the tests' shared server, starting it
// on first use. Like zktest.Standalone, it skips the test when ZooKeeper
// is not installed, except under CI.
func Server(tb testing.TB) string {
	tb.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shared.srv, shared.err = zktest.StartServer(ctx, zktest.Options{})
	})
	if shared.err != nil {
		if errors.Is(shared.err, zklaunch.ErrNotInstalled) && !zktest.OnCI() {
			tb.Skipf("%v (run scripts/install-zookeeper.sh)", shared.err)
		}
		tb.Fatal(shared.err)
	}
	return shared.srv.Addr()
}
