package zktest

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Exister is the one client call [WaitGone] needs; *zk.Conn and the
// session package's Conn have it.
type Exister interface {
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
}

// WaitGone waits, with an exists watch re-armed after each event, until
// path does not exist, and fails tb if it still does after within. Call it
// from the test's goroutine.
func WaitGone(tb testing.TB, conn Exister, path string, within time.Duration) {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		exists, _, ev, err := conn.ExistsW(path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			tb.Fatal(err)
		}
		if !exists {
			return
		}
		select {
		case <-ev:
		case <-deadline.C:
			tb.Fatalf("%s still exists after %v", path, within)
		}
	}
}
