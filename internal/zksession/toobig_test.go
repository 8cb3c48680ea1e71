package zksession_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// TestSessionLogsAReplyTooBig lists a node whose children's names take
// more than the client accepts in one reply: the client drops the
// connection, and the session logs why, with the size and the limit.
func TestSessionLogsAReplyTooBig(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	logs := actortest.NewLogs()
	s := zksession.New(actortest.SessionConfig(zksession.Config{Servers: []string{srv.Addr()}, Timeout: 4 * time.Second, Logger: slog.New(logs)}))
	w := &watcher{t: t, sub: s.Subscribe()}
	actortest.Run(t, "session", s.Run)
	up := w.waitFor("up", 10*time.Second, actortest.IsUp)
	if _, err := up.Conn.Create("/big", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	const nameLen, n = 20_000, 60 // 1.2 MB of names
	for i := 0; i < n; i += 10 {
		var ops []any
		for j := i; j < i+10; j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/big/%05d%s", j, strings.Repeat("x", nameLen)), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := up.Conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := up.Conn.Children("/big"); err == nil {
		t.Fatal("a list of 1.2 MB was read; want the client to refuse it")
	}
	r := logs.Next(t, 10*time.Second)
	for r.Level < slog.LevelError {
		r = logs.Next(t, 10*time.Second)
	}
	if !strings.Contains(r.Msg, "bigger than the client's limit") || r.Attrs["limit"] != fmt.Sprint(1<<20+4096) {
		t.Errorf("log %q %v; want the reply too big named, with the limit", r.Msg, r.Attrs)
	}
}
