package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The chaos group has, besides its members in the test's process,
// chaosProcs members in processes of their own: the test binary run
// again (see TestMain), one member each, talking to the ensemble through
// a proxy of the test's. They take every Update, stop what it revokes
// (taking up to chaosProcAck), ack, and report each step as a line
// stamped with the machine's wall clock, which the test records into the
// history as it comes (history.Recorder.Record).
//
// The faults pause-lease and pause-expire stop such a process (SIGSTOP)
// and resume it (SIGCONT), as a long garbage collection, CPU throttling
// or a VM's steal time would (issue 24, item 2):
//
//   - pause-lease stops it for 0.9 T (T = chaosProcTimeout): past its
//     lease (0.8 T, counted from a moment before the stop), but short of
//     the session's end, which comes no sooner than T after the last
//     bytes its client sent. The stop is timed right after those bytes
//     went through the proxy, so the session lives. Resumed, the member
//     must revoke everything at once (it cannot tell whether its session
//     lives); half the time it is then closed at once (SIGTERM, on which
//     the process calls Close), and Close must still wait for its
//     consumer's Ack before its claims go: nobody may take them over
//     before that Ack (the checker's (a), with no excuse).
//   - pause-expire stops it past T plus a tick plus a margin after the
//     last bytes its client sent: ZooKeeper ends its session meanwhile,
//     and the others rightly take its partitions over while it cannot
//     act or be told. Resumed, it must revoke everything at once. The
//     overlap of its consumer with the new owners until then is
//     inherent; the checker excuses it only if the new owner's fencing
//     token is larger and the stopped member revoked within
//     chaosResumeBound of its resume (see history.Pause).

const (
	chaosProcs       = 2
	chaosProcTimeout = 3 * time.Second        // the processes' session timeout
	chaosProcAck     = 500 * time.Millisecond // the most a process's consumer takes to stop revoked partitions
	chaosResumeBound = 2 * time.Second        // a resumed member revokes everything within this
	chaosFreshSend   = 15 * time.Millisecond  // a stop is timed within this of the client's last bytes
	chaosProcExit    = time.Minute            // a closed process must have exited within this
)

// chaosMemberEnv, when set, makes the test binary run one chaos member
// process instead of the tests (see TestMain); its value is the
// member's chaosProcConfig as JSON.
const chaosMemberEnv = "ZKALLOC_CHAOS_MEMBER"

type chaosProcConfig struct {
	Servers        []string
	Group          string
	Member         string
	Partitions     map[string][]int32
	SessionTimeout time.Duration
	Settle         time.Duration
	ReleaseTimeout time.Duration
	Strategy       string
	Seed           uint64
}

// chaosProc is one member process across its incarnations; name and
// proxy are fixed, the rest changes with each process.
type chaosProc struct {
	idx   int
	name  string
	proxy *zktest.Proxy
	incs  int

	cmd    *exec.Cmd
	stdin  io.WriteCloser // closing it closes the member, as SIGTERM does
	output chan struct{}  // closed when the process's output has ended

	mu       sync.Mutex
	seqs     map[int]int // the process's Update numbers to the history's
	last     zkalloc.Update
	started  chan struct{} // closed when the process reports Start returned, or ends
	startErr string
}

// startProc starts a new process for m and waits until its Start has
// returned, retrying while its name is still held by a closed
// incarnation's session.
func (c *chaos) startProc(m *chaosProc) {
	c.t.Helper()
	deadline := time.Now().Add(chaosStartMax)
	for {
		m.incs++
		var seed map[string][]int32
		for p := range c.set {
			if seed == nil {
				seed = map[string][]int32{}
			}
			seed[p.Topic] = append(seed[p.Topic], p.ID)
		}
		cfg, err := json.Marshal(chaosProcConfig{
			Servers:        m.proxy.Addrs(),
			Group:          c.group,
			Member:         m.name,
			Partitions:     seed,
			SessionTimeout: chaosProcTimeout,
			Settle:         chaosSettle,
			ReleaseTimeout: chaosRelease,
			Strategy:       c.strategy.Name(),
			Seed:           c.seed ^ uint64(m.idx)<<32 ^ uint64(m.incs),
		})
		if err != nil {
			c.t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), chaosMemberEnv+"="+string(cfg))
		cmd.Stderr = os.Stderr
		// The process dies with the test's: killed when the thread that
		// started it ends (see zktest's processes), and closed when its
		// input ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			c.t.Fatal(err)
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			c.t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			c.t.Fatal(err)
		}
		m.mu.Lock()
		m.cmd, m.stdin, m.output, m.seqs, m.last = cmd, stdin, make(chan struct{}), map[int]int{}, zkalloc.Update{}
		m.started, m.startErr = make(chan struct{}), ""
		started, output := m.started, m.output
		m.mu.Unlock()
		go c.readProc(m, stdout, started, output)
		select {
		case <-started:
		case <-time.After(chaosStartMax):
			c.t.Fatalf("member process %s: Start has not returned after %v", m.name, chaosStartMax)
		}
		m.mu.Lock()
		failure := m.startErr
		m.mu.Unlock()
		if failure == "" {
			return
		}
		c.stopProc(m)
		if !strings.Contains(failure, zkalloc.ErrDuplicateMember.Error()) || time.Now().After(deadline) {
			c.t.Fatalf("member process %s: %s", m.name, failure)
		}
		c.nameFreed(m.name, deadline)
	}
}

// readProc records what the process reports, until its output ends:
//
//	u <unix ns> <n> <generation> <members> <assigned> <revoked> <tokens>  received Update n
//	a <unix ns> <n>                                                      acked Update n
//	d <unix ns>                                                          Start returned
//	c <unix ns>                                                          calling Close
//	x <unix ns>                                                          the consumer has stopped everything
//	e <message>                                                          Start failed
//
// Lists are comma-separated, "-" for an empty one.
func (c *chaos) readProc(m *chaosProc, r io.Reader, started, output chan struct{}) {
	defer close(output)
	once := sync.OnceFunc(func() { close(started) })
	defer once()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var at time.Time
		if len(f) > 1 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				at = time.Unix(0, ns)
			}
		}
		switch {
		case f[0] == "u" && len(f) == 8:
			n, _ := strconv.Atoi(f[2])
			gen, _ := strconv.ParseInt(f[3], 10, 64)
			u := zkalloc.Update{Generation: gen, Members: splitList(f[4]), Assigned: parseParts(f[5]), Revoked: parseParts(f[6])}
			var tokens []int64
			for _, s := range splitList(f[7]) {
				tok, _ := strconv.ParseInt(s, 10, 64)
				tokens = append(tokens, tok)
			}
			seq := c.rec.Record(history.Event{Time: at, Kind: history.KindReceived, Member: m.name, Generation: gen,
				Members: u.Members, Assigned: u.Assigned, Revoked: u.Revoked, Tokens: tokens})
			m.mu.Lock()
			m.seqs[n], m.last = seq, u
			m.mu.Unlock()
		case f[0] == "a" && len(f) == 3:
			n, _ := strconv.Atoi(f[2])
			m.mu.Lock()
			seq := m.seqs[n]
			m.mu.Unlock()
			c.rec.Record(history.Event{Time: at, Kind: history.KindAcked, Member: m.name, Seq: seq})
		case f[0] == "d":
			once()
		case f[0] == "c":
			c.rec.Record(history.Event{Time: at, Kind: history.KindClosing, Member: m.name})
		case f[0] == "x":
			c.rec.Record(history.Event{Time: at, Kind: history.KindClosed, Member: m.name})
		case f[0] == "e":
			m.mu.Lock()
			m.startErr = sc.Text()
			m.mu.Unlock()
			once()
		}
	}
}

func splitList(s string) []string {
	if s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

func parseParts(s string) []zkalloc.Partition {
	var out []zkalloc.Partition
	for _, f := range splitList(s) {
		p, err := rebalance.Parse(f)
		if err == nil {
			out = append(out, p)
		}
	}
	return out
}

func joinList[T any](xs []T) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// stopProc closes m's process (SIGTERM: it calls Close) and waits for it
// to exit; a process that has not exited within chaosProcExit fails the
// test.
func (c *chaos) stopProc(m *chaosProc) {
	c.t.Helper()
	m.mu.Lock()
	cmd, output := m.cmd, m.output
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // in case it was stopped
	cmd.Process.Signal(syscall.SIGTERM)
	c.waitProc(m, cmd, output)
}

// waitProc waits for cmd, m's process, to exit and its output to end.
func (c *chaos) waitProc(m *chaosProc, cmd *exec.Cmd, output chan struct{}) {
	c.t.Helper()
	select {
	case <-output:
	case <-time.After(chaosProcExit):
		cmd.Process.Kill()
		<-output
		c.t.Errorf("seed %d: member process %s did not exit within %v of its SIGTERM", c.seed, m.name, chaosProcExit)
	}
	if err := cmd.Wait(); err != nil {
		c.t.Errorf("member process %s: %v", m.name, err)
	}
	m.mu.Lock()
	if m.cmd == cmd {
		m.cmd, m.stdin = nil, nil
	}
	m.mu.Unlock()
}

// pauseMember runs one pause-lease or pause-expire fault.
func (c *chaos) pauseMember(kind string) {
	closeAfter := kind == "pause-lease" && c.rng.IntN(2) == 0
	m := c.procs[c.rng.IntN(len(c.procs))]
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	path := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Member(m.name)
	var before *zk.Stat
	waitFor(c.t, chaosStartMax, func() string {
		// A member resumed past its session joins again in a new one.
		var err error
		if _, before, err = c.obs.Get(path); err != nil {
			return fmt.Sprintf("%s's member node: %v", m.name, err)
		}
		return ""
	})
	// Stop it right after its client sent something: its session then
	// lives at least chaosProcTimeout from now.
	fresh := time.Now().Add(chaosProcTimeout)
	for time.Since(m.proxy.LastSent()) > chaosFreshSend && time.Now().Before(fresh) {
		time.Sleep(time.Millisecond) // polling the proxy, which has no wake-up
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
	from := time.Now()
	sent := m.proxy.LastSent()
	var until time.Time
	switch kind {
	case "pause-lease":
		until = from.Add(chaosProcTimeout * 9 / 10)
		if limit := sent.Add(chaosProcTimeout - 150*time.Millisecond); until.After(limit) {
			c.t.Logf("pause-lease of %s: its client last sent %v before the stop; the session may end", m.name, from.Sub(sent))
		}
	default:
		until = from.Add(chaosProcTimeout + chaosTick + 700*time.Millisecond)
	}
	time.Sleep(time.Until(until)) // the stop is the fault itself
	if kind == "pause-expire" {
		// Past every byte the proxy forwarded since, too.
		if late := m.proxy.LastSent().Add(chaosProcTimeout + chaosTick + 300*time.Millisecond); late.After(time.Now()) {
			time.Sleep(time.Until(late))
		}
	}
	// Stamped before it runs again, so that everything the process
	// stamps after its resume comes after.
	to := time.Now()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatal(err)
	}
	if closeAfter {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	c.rec.Paused(history.Pause{Member: m.name, From: from, To: to, PastLease: true, Expired: kind == "pause-expire"})
	// Whether the session lived as intended: the member node's owner.
	_, after, err := c.obs.Get(path)
	switch lived := err == nil && after.EphemeralOwner == before.EphemeralOwner; {
	case kind == "pause-expire" && lived:
		c.t.Errorf("seed %d: %s's session outlived its stop of %v", c.seed, m.name, to.Sub(from).Round(time.Millisecond))
	case kind == "pause-lease" && !lived && !closeAfter:
		c.t.Logf("pause-lease of %s: its session ended (%v), not expected", m.name, err)
	}
	c.t.Logf("%s: %s stopped for %v (session timeout %v), closed at once after: %v", kind, m.name, to.Sub(from).Round(time.Millisecond), chaosProcTimeout, closeAfter)
	if closeAfter {
		m.mu.Lock()
		output := m.output
		m.mu.Unlock()
		c.waitProc(m, cmd, output)
		c.pause(0, 500*time.Millisecond)
		c.startProc(m)
	}
}

// procsConverged reports what keeps the member processes from agreeing
// with gen and the expected member count; "" if nothing.
func (c *chaos) procsConverged(gen int64, members int, seen map[zkalloc.Partition]string) string {
	for _, m := range c.procs {
		m.mu.Lock()
		u, up := m.last, m.cmd != nil
		m.mu.Unlock()
		switch {
		case !up:
			return m.name + " is down"
		case u.Generation != gen:
			return fmt.Sprintf("%s at generation %d, want %d", m.name, u.Generation, gen)
		case len(u.Members) != members:
			return fmt.Sprintf("%s sees members %v", m.name, u.Members)
		}
		for _, p := range u.Assigned {
			if other, ok := seen[p]; ok {
				return fmt.Sprintf("%s assigned to %s and %s", p, other, m.name)
			}
			seen[p] = m.name
		}
	}
	return ""
}

// runChaosMember runs one chaos member process, configured by
// chaosMemberEnv: it starts, reports on its output what readProc reads,
// and closes on SIGTERM or at the end of its input. It returns the exit
// code.
func runChaosMember() int {
	var cfg chaosProcConfig
	if err := json.Unmarshal([]byte(os.Getenv(chaosMemberEnv)), &cfg); err != nil {
		fmt.Printf("e %v\n", err)
		return 2
	}
	strategies := map[string]rebalance.Strategy{}
	for _, s := range []rebalance.Strategy{rebalance.RoundRobin, rebalance.Balanced, rebalance.Range, rebalance.StickyStrategy} {
		strategies[s.Name()] = s
	}
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:        cfg.Servers,
		Group:          cfg.Group,
		Member:         cfg.Member,
		Partitions:     cfg.Partitions,
		SessionTimeout: cfg.SessionTimeout,
		Settle:         cfg.Settle,
		ReleaseTimeout: cfg.ReleaseTimeout,
		Strategy:       strategies[cfg.Strategy],
		Logger:         testLogger(),
	})
	if err != nil {
		fmt.Printf("e %v\n", err)
		return 2
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...) // one write per line: whole lines reach the test
	}
	now := func() int64 { return time.Now().UnixNano() }
	r := rand.New(rand.NewPCG(cfg.Seed, 0xc0de))
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		n := 0
		for u := range alloc.Updates() {
			n++
			tokens := make([]int64, len(u.Assigned))
			for i, p := range u.Assigned {
				tokens[i], _ = u.Token(p)
			}
			say("u %d %d %d %s %s %s %s", now(), n, u.Generation, joinList(u.Members), joinList(u.Assigned), joinList(u.Revoked), joinList(tokens))
			if len(u.Revoked) > 0 {
				time.Sleep(chaosProcAck/5 + time.Duration(r.Int64N(int64(chaosProcAck*4/5)))) // stopping takes the consumer a while
			}
			say("a %d %d", now(), n)
			u.Ack()
		}
		say("x %d", now())
	}()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), chaosStartMax)
	err = alloc.Start(ctx)
	cancel()
	if err != nil {
		say("e start: %v", err)
		alloc.Close()
		<-consumed
		return 1
	}
	say("d %d", now())
	select {
	case <-term:
	case <-eof:
	}
	say("c %d", now())
	err = alloc.Close()
	<-consumed
	if err != nil {
		fmt.Fprintf(os.Stderr, "member %s: Close: %v\n", cfg.Member, err)
	}
	return 0
}

// procNames returns the member processes' names.
func (c *chaos) procNames() []string {
	var out []string
	for _, m := range c.procs {
		out = append(out, m.name)
	}
	return out
}
