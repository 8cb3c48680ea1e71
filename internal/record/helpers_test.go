package record_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// within bounds every wait in these tests: generous, for a loaded machine.
const within = 20 * time.Second

// groups counts the groups made, so that each is new even when a test
// runs again (-count) on the same server.
var groups atomic.Int64

// groupOf returns paths of a new group of the test's own on the shared
// server.
func groupOf(t testing.TB) zkpath.Group {
	name := strings.NewReplacer("/", "-", " ", "_", "#", "-").Replace(t.Name())
	return zkpath.Group{Root: "/record", Group: fmt.Sprintf("%s-%d", name, groups.Add(1))}
}

// member is one member's runner on a session of its own.
type member struct {
	name     string
	r        *record.Runner
	requests *atomic.Int64 // requests the runner sent
	ops      *opLog        // and what they were
	// gate, while it holds a channel, holds every listing of children
	// until that channel is closed.
	gate *atomic.Pointer[chan struct{}]
}

// startMember starts a session for name and a runner on it, its config
// changed by configure (if not nil), and waits for the session to be up.
func startMember(tb testing.TB, paths zkpath.Group, name string, configure func(*record.Config)) *member {
	tb.Helper()
	m := &member{name: name, requests: new(atomic.Int64), ops: new(opLog), gate: new(atomic.Pointer[chan struct{}])}
	sess := zksession.New(actortest.SessionConfig(zksession.Config{
		Servers:  []string{record.Server(tb)},
		WrapConn: func(c zksession.Conn) zksession.Conn { return gatedConn{countingConn{c, m.requests, m.ops}, m.gate} },
	}))
	sub, probe := sess.Subscribe(), sess.Subscribe()
	actortest.Run(tb, name+" session", sess.Run)
	var st zksession.State
	actortest.Await(tb, probe, &st, within, name+" session up", actortest.IsUp)
	cfg := record.Config{Paths: paths, Member: name, Session: sub, Logger: testLogger(tb, name)}
	if configure != nil {
		configure(&cfg)
	}
	m.r = record.New(cfg)
	return m
}

// assign runs m's Assign for job, failing tb on an error.
func (m *member) assign(tb testing.TB, job decision.Job) []rebalance.Partition {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	got, err := m.r.Assign(ctx, job)
	if err != nil {
		tb.Fatalf("%s: Assign(%d, %d): %v", m.name, job.MembersZxid, job.PartitionsZxid, err)
	}
	return got
}

// awaitAfter waits until what each of ms's last write left to do (the
// head's watch armed again, the old nodes deleted) is done. None of ms
// may be in Assign.
func awaitAfter(ms ...*member) {
	for _, m := range ms {
		record.AwaitAfter(m.r)
	}
}

// result is one Assign's answer.
type result struct {
	parts []rebalance.Partition
	err   error
	took  time.Duration
}

// assignAll runs Assign for job on every member at once, each within
// the given time, and returns their answers in order.
func assignAll(job decision.Job, d time.Duration, ms ...*member) []result {
	out := make([]result, len(ms))
	done := make(chan struct{})
	for i, m := range ms {
		go func() {
			defer func() { done <- struct{}{} }()
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			start := time.Now()
			out[i].parts, out[i].err = m.r.Assign(ctx, job)
			out[i].took = time.Since(start)
		}()
	}
	for range ms {
		<-done
	}
	return out
}

// jobOf is a job over the live members (weights nil: all 1) and parts.
func jobOf(mz, pz int64, live []string, parts []rebalance.Partition) decision.Job {
	return decision.Job{Members: live, Live: live, Partitions: parts, MembersZxid: mz, PartitionsZxid: pz}
}

// partsOf lists topics t0..t(topics-1), each with ids 0..per-1, sorted.
func partsOf(topics, per int) []rebalance.Partition {
	var out []rebalance.Partition
	for t := range topics {
		out = append(out, actortest.PartsN(fmt.Sprintf("t%d", t), per)...)
	}
	rebalance.Sort(out)
	return out
}

// names returns n member names of 25 bytes.
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("consumer-%016d", i)
	}
	return out
}

// observe returns a session of the test's own, for its reads and writes.
func observe(tb testing.TB) zksession.Conn {
	tb.Helper()
	return actortest.Observe(tb, []string{record.Server(tb)}, within).Conn
}

// stored is the record as read from ZooKeeper.
type stored struct {
	head      assignment.Head
	stat      *zk.Stat
	placement rebalance.Placement
	children  []string
}

// readRecord reads the whole record, failing tb if there is none or it
// cannot be decoded.
func readRecord(tb testing.TB, conn zksession.Conn, paths zkpath.Group) stored {
	tb.Helper()
	data, stat, err := conn.Get(paths.Assignment())
	if err != nil {
		tb.Fatalf("read the head: %v", err)
	}
	h, err := assignment.DecodeHead(data)
	if err != nil {
		tb.Fatalf("decode the head: %v", err)
	}
	shares := make(map[string][]byte)
	for _, e := range h.Members {
		if e.Node == "" {
			continue
		}
		d, _, err := conn.Get(paths.Share(e.Node))
		if err != nil {
			tb.Fatalf("read %s's share %s: %v", e.Name, e.Node, err)
		}
		shares[e.Node] = d
	}
	pl, err := assignment.Decode(h, shares)
	if err != nil {
		tb.Fatalf("decode the record: %v", err)
	}
	children, _, err := conn.Children(paths.Assignment())
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(children)
	return stored{head: h, stat: stat, placement: pl, children: children}
}

// named lists the share nodes h names, sorted.
func named(h assignment.Head) []string {
	var out []string
	for _, e := range h.Members {
		if e.Node != "" {
			out = append(out, e.Node)
		}
	}
	slices.Sort(out)
	return out
}

// sticky computes what a record over prev for job holds, as the runner
// must: members of weight 1 (job.Weights nil) or job's weights.
func sticky(tb testing.TB, prev rebalance.Placement, job decision.Job) rebalance.Result {
	tb.Helper()
	ms := make([]rebalance.Member, len(job.Members))
	for i, n := range job.Members {
		ms[i] = rebalance.Member{Name: n, Weight: max(job.Weight(n), 1), Drained: slices.Contains(job.Drained, n)}
	}
	res, err := rebalance.Sticky(prev, ms, job.Partitions)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// balanced is the placement rebalance.Balanced gives job.
func balanced(tb testing.TB, job decision.Job) rebalance.Placement {
	tb.Helper()
	owned, err := rebalance.Balanced.Assign(job.Members, job.Partitions)
	if err != nil {
		tb.Fatal(err)
	}
	pl, err := rebalance.PlacementFrom(owned)
	if err != nil {
		tb.Fatal(err)
	}
	return pl
}

// sumCounts adds up the members' counts.
func sumCounts(ms ...*member) record.Counts {
	var c record.Counts
	for _, m := range ms {
		mc := m.r.Counts()
		c.Writes += mc.Writes
		c.FailedCAS += mc.FailedCAS
	}
	return c
}

// countingConn counts the requests sent on a connection, and logs them
// in ops if it is not nil.
type countingConn struct {
	zksession.Conn
	n   *atomic.Int64
	ops *opLog
}

func (c countingConn) count(op, p string) {
	c.n.Add(1)
	if c.ops != nil {
		c.ops.add(op + " " + p)
	}
}

func (c countingConn) Get(p string) ([]byte, *zk.Stat, error) {
	c.count("get", p)
	return c.Conn.Get(p)
}
func (c countingConn) GetW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count("getw", p)
	return c.Conn.GetW(p)
}
func (c countingConn) Exists(p string) (bool, *zk.Stat, error) {
	c.count("exists", p)
	return c.Conn.Exists(p)
}
func (c countingConn) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count("existsw", p)
	return c.Conn.ExistsW(p)
}
func (c countingConn) Children(p string) ([]string, *zk.Stat, error) {
	c.count("children", p)
	return c.Conn.Children(p)
}
func (c countingConn) Create(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count("create", p)
	return c.Conn.Create(p, data, flags, acl)
}
func (c countingConn) Set(p string, data []byte, version int32) (*zk.Stat, error) {
	c.count("set", p)
	return c.Conn.Set(p, data, version)
}
func (c countingConn) Delete(p string, version int32) error {
	c.count("delete", p)
	return c.Conn.Delete(p, version)
}
func (c countingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	p := ""
	if len(ops) > 0 {
		switch op := ops[0].(type) {
		case *zk.SetDataRequest:
			p = op.Path
		case *zk.CreateRequest:
			p = op.Path
		case *zk.DeleteRequest:
			p = op.Path
		}
	}
	c.count("multi", p)
	return c.Conn.Multi(ops...)
}

// gatedConn holds every listing of children while gate holds a channel,
// until that channel is closed.
type gatedConn struct {
	countingConn
	gate *atomic.Pointer[chan struct{}]
}

func (c gatedConn) Children(p string) ([]string, *zk.Stat, error) {
	if g := c.gate.Load(); g != nil {
		<-*g
	}
	return c.countingConn.Children(p)
}

// opLog is the requests a runner sent, as "op path".
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

// take returns the requests logged since the last take.
func (l *opLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

// testLogger logs to the test's log, at DEBUG, while the test runs.
func testLogger(tb testing.TB, name string) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("runner", name)
	}
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("runner", name)
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
