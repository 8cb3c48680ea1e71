package integration_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

func TestMain(m *testing.M) {
	if os.Getenv(procMemberEnv) != "" {
		os.Exit(runProcMember()) // a member process of BenchmarkConvergenceProcs
	}
	if os.Getenv(chaosMemberEnv) != "" {
		os.Exit(runChaosMember()) // a member process of TestChaos
	}
	goleak.VerifyTestMain(m)
}

// The helpers below are those of the root package's tests
// (helpers_test.go) that the suites here use: this is another module.

// testTimeout bounds every wait for the group to converge.
const testTimeout = 30 * time.Second

// pollInterval is how often a wait re-checks its condition.
const pollInterval = 10 * time.Millisecond

// testLogger logs to stderr at the level in ZKALLOC_TEST_LOG (debug, info,
// warn, error); by default only errors.
func testLogger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("ZKALLOC_TEST_LOG"))); err != nil {
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func ids(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// server starts a standalone ZooKeeper for the test.
func server(t *testing.T) *zklaunch.Server {
	return zktest.Standalone(t, zktest.Options{})
}

// waitFor polls cond until it returns "" or the deadline passes; cond
// returns what is still wrong. Benchmarks use it too.
func waitFor(t testing.TB, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.After(within)
	for {
		problem := cond()
		if problem == "" {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("not within %v: %s", within, problem)
		case <-time.After(pollInterval):
		}
	}
}
