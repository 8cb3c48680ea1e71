package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// procMemberEnv, when set, makes the test binary run one member of
// BenchmarkConvergenceProcs instead of the tests (see TestMain): its
// value is the member's procMemberConfig as JSON.
const procMemberEnv = "ZKALLOC_BENCH_MEMBER"

type procMemberConfig struct {
	Servers  []string
	Group    string
	Member   string
	Strategy string // the strategy's Name: one of procStrategies
}

// procStrategies are the strategies BenchmarkConvergenceProcs runs, the
// default first.
var procStrategies = []rebalance.Strategy{rebalance.StickyStrategy, rebalance.Balanced}

// BenchmarkConvergenceProcs is BenchmarkConvergence (settle 0, the
// default strategy and Balanced) with every member in a process of its own, the test binary run again
// as a member: the members' computations then run in separate processes,
// as they would on separate machines, though here on the same 2 cores as
// the server. Times are taken by the members with the machine's clock:
// from the newcomer's call to Start, or the leaver's to Close, to the
// last member's receipt of the Update of the new view with the hand-off
// complete.
//
//	go test -run XXX -bench ConvergenceProcs -benchtime 20x -timeout 60m .
func BenchmarkConvergenceProcs(b *testing.B) {
	srv := zktest.Standalone(b, zktest.Options{})
	for _, s := range procStrategies {
		for _, members := range []int{10, 50} {
			b.Run(fmt.Sprintf("%s/members=%d/settle=0s", s.Name(), members), func(b *testing.B) {
				benchConvergenceProcs(b, srv.Addr(), s, members)
			})
		}
	}
}

func benchConvergenceProcs(b *testing.B, server string, s rebalance.Strategy, n int) {
	g := &procGroup{b: b, servers: []string{server}, strategy: s.Name(), group: fmt.Sprintf("procs-%d-%d", n, time.Now().UnixNano()), wake: make(chan struct{}, 1)}
	defer g.closeAll()
	for range n {
		g.join().send("start")
	}
	g.waitConverged(time.Now())

	var joins, leaves, starts []time.Duration
	b.ResetTimer()
	for range b.N {
		m := g.join()
		m.await(b, "r")
		m.send("start")
		start := m.await(b, "s")
		joins = append(joins, g.waitConverged(start))
		starts = append(starts, m.await(b, "d").Sub(start))

		leaver := g.members[len(g.members)-1]
		g.members = g.members[:len(g.members)-1]
		leaver.send("close")
		start = leaver.await(b, "c")
		leaves = append(leaves, g.waitConverged(start))
		leaver.wait(b)
	}
	b.StopTimer()
	report(b, "join", joins)
	report(b, "leave", leaves)
	report(b, "start", starts)
}

// procGroup is a group of member processes.
type procGroup struct {
	b        *testing.B
	servers  []string
	strategy string // the members' Strategy, by name
	group    string
	members  []*procMember
	wake     chan struct{} // one slot: some member reported an update
}

// procMember is one member process and what it reported.
type procMember struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its output ends

	mu       sync.Mutex
	gen      int64
	members  int
	assigned int
	at       int64            // when it received its latest Update, Unix ns
	marks    map[string]int64 // "r" (ready to start), "s" (calling Start), "d" (Start returned), "c" (calling Close): when, Unix ns
	marked   chan struct{}    // closed and replaced on every mark
	failure  string
}

func (g *procGroup) join() *procMember {
	name := fmt.Sprintf("m%03d", len(g.members))
	cfg, err := json.Marshal(procMemberConfig{Servers: g.servers, Group: g.group, Member: name, Strategy: g.strategy})
	if err != nil {
		g.b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), procMemberEnv+"="+string(cfg))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		g.b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		g.b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		g.b.Fatal(err)
	}
	m := &procMember{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{}), marks: map[string]int64{}, marked: make(chan struct{})}
	go m.read(stdout, g.wake)
	g.members = append(g.members, m)
	return m
}

// read parses the member's reports: "u <at> <generation> <members>
// <assigned>", "r <at>", "s <at>", "d <at>", "c <at>", "e <error>".
func (m *procMember) read(r io.Reader, wake chan<- struct{}) {
	defer close(m.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		m.mu.Lock()
		switch {
		case f[0] == "u" && len(f) == 5:
			fmt.Sscan(f[1], &m.at)
			fmt.Sscan(f[2], &m.gen)
			fmt.Sscan(f[3], &m.members)
			fmt.Sscan(f[4], &m.assigned)
		case len(f) == 2 && strings.Contains("rsdc", f[0]):
			var at int64
			fmt.Sscan(f[1], &at)
			m.marks[f[0]] = at
			close(m.marked)
			m.marked = make(chan struct{})
		case f[0] == "e":
			m.failure = sc.Text()
		}
		m.mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

func (m *procMember) send(line string) {
	fmt.Fprintln(m.stdin, line)
}

// await waits for the member's mark and returns it.
func (m *procMember) await(b *testing.B, mark string) time.Time {
	deadline := time.After(time.Minute)
	for {
		m.mu.Lock()
		at, ok := m.marks[mark]
		ch, failure := m.marked, m.failure
		m.mu.Unlock()
		if ok {
			return time.Unix(0, at)
		}
		select {
		case <-ch:
		case <-m.done:
			b.Fatalf("member %s exited before %q: %s", m.name, mark, failure)
		case <-deadline:
			b.Fatalf("member %s: no %q within a minute", m.name, mark)
		}
	}
}

// wait waits for the member process to exit.
func (m *procMember) wait(b *testing.B) {
	m.stdin.Close()
	select {
	case <-m.done:
	case <-time.After(time.Minute):
		m.cmd.Process.Kill()
		b.Errorf("member %s did not exit within a minute of its Close", m.name)
	}
	if err := m.cmd.Wait(); err != nil {
		b.Errorf("member %s: %v", m.name, err)
	}
}

func (g *procGroup) closeAll() {
	for _, m := range g.members {
		m.send("close")
	}
	for _, m := range g.members {
		m.wait(g.b)
	}
	g.members = nil
}

// waitConverged waits until every member's latest Update is of one
// generation, lists every member and the partitions add up, and returns
// how long after start the last of those Updates came.
func (g *procGroup) waitConverged(start time.Time) time.Duration {
	deadline := time.After(time.Minute)
	for {
		var gen, last int64
		ok, assigned := true, 0
		for i, m := range g.members {
			m.mu.Lock()
			if i == 0 {
				gen = m.gen
			}
			ok = ok && m.gen == gen && m.members == len(g.members)
			assigned += m.assigned
			last = max(last, m.at)
			m.mu.Unlock()
		}
		if ok && assigned == 1000 {
			return time.Unix(0, last).Sub(start)
		}
		select {
		case <-g.wake:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			g.b.Fatalf("no convergence within a minute")
		}
	}
}

// runProcMember runs one member of BenchmarkConvergenceProcs, configured
// by procMemberEnv: it starts on a "start" line and closes on a "close"
// line or at the end of its input, and
// reports on its output what benchConvergenceProcs reads. It returns the
// exit code.
func runProcMember() int {
	var cfg procMemberConfig
	if err := json.Unmarshal([]byte(os.Getenv(procMemberEnv)), &cfg); err != nil {
		fmt.Printf("e %v\n", err)
		return 2
	}
	i := slices.IndexFunc(procStrategies, func(s rebalance.Strategy) bool { return s.Name() == cfg.Strategy })
	if i < 0 {
		fmt.Printf("e strategy %q: not one of procStrategies\n", cfg.Strategy)
		return 2
	}
	parts := map[string][]int32{}
	for t := range 10 {
		parts[fmt.Sprintf("t%d", t)] = ids(100)
	}
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:  cfg.Servers,
		Group:    cfg.Group,
		Member:   cfg.Member,
		Strategy: procStrategies[i],
		// The group's members run in separate processes of one test:
		// their logs go where the benchmark's go.
		Partitions: parts,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		fmt.Printf("e %v\n", err)
		return 2
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for u := range alloc.Updates() {
			u.Ack()
			say("u %d %d %d %d", time.Now().UnixNano(), u.Generation, len(u.Members), len(u.Assigned))
		}
	}()
	// The process is up before the join is timed, as in
	// BenchmarkConvergence, where the newcomer's allocator is made before
	// its Start: the time is zkalloc's, not the process's start.
	in := bufio.NewScanner(os.Stdin)
	say("r %d", time.Now().UnixNano())
	if !in.Scan() || in.Text() != "start" {
		alloc.Close()
		<-consumed
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	say("s %d", time.Now().UnixNano())
	if err := alloc.Start(ctx); err != nil {
		say("e start: %v", err)
		alloc.Close()
		<-consumed
		return 1
	}
	say("d %d", time.Now().UnixNano())
	for in.Scan() && in.Text() != "close" {
	}
	say("c %d", time.Now().UnixNano())
	err = alloc.Close()
	<-consumed
	if err != nil {
		say("e close: %v", err)
		return 1
	}
	return 0
}
