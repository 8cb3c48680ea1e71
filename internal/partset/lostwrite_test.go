package partset_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// pausingConn holds a writer between its read and its write: once armed,
// the first Multi it is asked for (the compare-and-set write of a change,
// made after the change has read its topics) reports itself on paused
// and waits for resume before it is sent. It records every Multi's error.
// It is safe for concurrent use.
type pausingConn struct {
	zksession.Conn
	armed  *atomic.Bool
	paused chan<- struct{}
	resume <-chan struct{}

	mu     *sync.Mutex
	multis *[]error
}

func newPausingConn(c zksession.Conn) (pc pausingConn, paused <-chan struct{}, resume chan<- struct{}) {
	p, r := make(chan struct{}, 1), make(chan struct{})
	return pausingConn{Conn: c, armed: new(atomic.Bool), paused: p, resume: r, mu: new(sync.Mutex), multis: new([]error)}, p, r
}

func (c pausingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if c.armed.CompareAndSwap(true, false) {
		c.paused <- struct{}{} // one slot: the test takes it
		<-c.resume
	}
	res, err := c.Conn.Multi(ops...)
	c.mu.Lock()
	*c.multis = append(*c.multis, err)
	c.mu.Unlock()
	return res, err
}

func (c pausingConn) results() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(*c.multis)
}

// TestNoLostSetWrite plays issue 24's lost write step by step: W1 reads
// topic t ("0") to add 7 and is held before its write; W2 removes 0,
// emptying t; W3 adds 5; then W1 writes. W1's compare-and-set must fail
// on the version it read, and W1 must read t again and add 7 to what is
// there: t ends as "5,7". When an emptied topic's node was deleted, W3
// created it again at version 0, W1's write at version 0 went through,
// and t ended as "0,7": 5 lost and 0 back.
//
// W1 is each of the two writers: the Set actor (a member's AddPartitions)
// and Change (the zkalloc command); W2 and W3 are Change.
func TestNoLostSetWrite(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	for _, w1 := range []string{"Set.Add", "Change"} {
		t.Run(w1, func(t *testing.T) {
			paths := zkpath.Group{Root: "/zkalloc", Group: "lost-" + w1}
			if err := partset.Change(obs, paths, false, map[string][]int32{"t": {0}}); err != nil {
				t.Fatal(err)
			}
			pc, paused, resume := newPausingConn(obs)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			add7 := map[string][]int32{"t": {7}}
			done := make(chan error, 1)
			var m *member
			switch w1 {
			case "Set.Add":
				m = startSetWith(t, []string{srv.Addr()}, paths, nil, func(c zksession.Conn) zksession.Conn {
					w := pc // shares the pause and the record
					w.Conn = c
					return w
				}, nil)
				m.waitParts(actortest.Parts("t", 0))
				pc.armed.Store(true)
				go func() { done <- m.set.Add(ctx, add7) }()
			case "Change":
				pc.armed.Store(true)
				go func() { done <- partset.Change(pc, paths, false, add7) }()
			}
			select {
			case <-paused: // W1 has read t at its version and planned "0,7"
			case err := <-done:
				t.Fatalf("W1 returned %v before its write", err)
			case <-ctx.Done():
				t.Fatal("W1 never came to its write")
			}
			if err := partset.Change(obs, paths, true, map[string][]int32{"t": {0}}); err != nil {
				t.Fatalf("W2 removing 0: %v", err)
			}
			if err := partset.Change(obs, paths, false, map[string][]int32{"t": {5}}); err != nil {
				t.Fatalf("W3 adding 5: %v", err)
			}
			close(resume)
			if err := <-done; err != nil {
				t.Fatalf("W1 adding 7: %v", err)
			}

			data, _, err := obs.Get(paths.Topic("t"))
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != "5,7" {
				t.Errorf("topic t holds %q after W1 +7, W2 -0, W3 +5 with W1's write last; want %q (a lost write if 5 is missing or 0 is back)", data, "5,7")
			}
			got := pc.results()
			if len(got) != 2 || !errors.Is(got[0], zk.ErrBadVersion) || got[1] != nil {
				t.Errorf("W1's writes failed with %v; want a failed compare-and-set (%v), then a write after reading t again", got, zk.ErrBadVersion)
			}
			if m != nil && !t.Failed() {
				m.waitParts(actortest.Parts("t", 5, 7))
			}
			set, _, err := partset.Read(obs, paths)
			if err != nil || fmt.Sprint(set) != "map[t:[5 7]]" {
				t.Errorf("Read = %v, %v; want t:5,7", set, err)
			}
		})
	}
}

// laggingConn answers Get from a copy of some nodes taken earlier, as a
// server that lags behind its leader does, until Sync is called: then
// from the server itself.
type laggingConn struct {
	zksession.Conn
	old    map[string][]byte // path -> data, the lagging copy (version 0)
	synced *atomic.Bool
}

func (c laggingConn) Get(path string) ([]byte, *zk.Stat, error) {
	if data, ok := c.old[path]; ok && !c.synced.Load() {
		return data, &zk.Stat{}, nil
	}
	return c.Conn.Get(path)
}

func (c laggingConn) Sync(path string) (string, error) {
	c.synced.Store(true)
	return c.Conn.Sync(path)
}

// TestNoLostSetWriteFromALaggingRead: a removal planned on a read from a
// server that has not yet seen the add of what it removes finds nothing
// to do; without a sync first it wrote nothing and returned OK, and the
// partition stayed (the chaos test's set writers found it).
func TestNoLostSetWriteFromALaggingRead(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	obs := actortest.Observe(t, []string{srv.Addr()}, 10*time.Second).Conn
	paths := zkpath.Group{Root: "/zkalloc", Group: "lagging"}
	if err := partset.Change(obs, paths, false, map[string][]int32{"t": {0, 1}}); err != nil {
		t.Fatal(err)
	}
	lag := laggingConn{Conn: obs, old: map[string][]byte{paths.Topic("t"): []byte("0")}, synced: new(atomic.Bool)}
	if err := partset.Change(lag, paths, true, map[string][]int32{"t": {1}}); err != nil {
		t.Fatal(err)
	}
	data, _, err := obs.Get(paths.Topic("t"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != "0" {
		t.Errorf("t after removing 1 is %q, want %q: the removal was planned on a lagging read and lost", got, "0")
	}
}
