package partset_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// countingConn counts the plain reads, which only writes make (the set
// reads with watches).
type countingConn struct {
	zksession.Conn
	gets *atomic.Int64
}

func (c countingConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.gets.Add(1)
	return c.Conn.Get(p)
}

// A change written in several multis reads each topic once for them: the
// topics read past a full multi are kept for the next, not read again.
// (The check before the first multi reads the rest once more.)
func TestSetWriteReadsEachTopicOnce(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	paths := zkpath.Group{Root: "/zkalloc", Group: t.Name()}
	var gets atomic.Int64
	m := startSetWith(t, []string{srv.Addr()}, paths, nil, func(c zksession.Conn) zksession.Conn {
		return countingConn{Conn: c, gets: &gets}
	}, nil)
	ids := every(2, 100_000) // about 294 KB: two do not fit one multi
	const topics = 4
	add := make(map[string][]int32)
	var want []rebalance.Partition
	for i := range topics {
		name := fmt.Sprintf("t%d", i)
		add[name] = ids
		want = append(want, actortest.Parts(name, ids...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.set.Add(ctx, add); err != nil {
		t.Fatal(err)
	}
	m.waitParts(want)
	if got, once := gets.Load(), int64(2*topics-1); got != once {
		t.Errorf("%d topics written in %d multis with %d reads, want %d", topics, topics, got, once)
	}
}
