package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrExited is returned, wrapped, when a server process exits while it is
// being started.
var ErrExited = errors.New("zktest: server process exited")

// errBindFailed reports a server that could not bind one of its ports.
var errBindFailed = errors.New("zktest: server could not bind its port")

// ErrClosed is returned, wrapped, by methods called after Close.
var ErrClosed = errors.New("zktest: closed")

const (
	loopback = "127.0.0.1"

	// Main classes of a standalone server and of an ensemble member.
	standaloneMain = "org.apache.zookeeper.server.ZooKeeperServerMain"
	quorumMain     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	logName = "zookeeper.log"
	cfgName = "zoo.cfg"

	// defaultWait bounds a start or wait whose context has no deadline.
	defaultWait = 2 * time.Minute
	// stopWait bounds how long a stopped process may take to exit before
	// it is killed; killWait how long a killed one may take.
	stopWait = 10 * time.Second
	killWait = 10 * time.Second
	// pollInterval paces readiness and leader polls.
	pollInterval = 25 * time.Millisecond
	// probeTimeout bounds one four-letter-word probe.
	probeTimeout = time.Second
	// bindAttempts is how many fresh ports a start tries when the server
	// loses a race for its port.
	bindAttempts = 5
)

// jvmFlags make a small JVM that starts quickly: ZooKeeper under test
// needs little heap and no optimizing compiler.
var jvmFlags = []string{
	"-Xmx256m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-Xshare:auto",
	"-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.admin.enableServer=false",
	"-Dzookeeper.jmx.log4j.disable=true",
	"-Dzookeeper.root.logger=INFO,CONSOLE",
}

// smallJVMFlags are the flags of jvmFlags that [Options.DefaultJVM] leaves
// out.
var smallJVMFlags = map[string]bool{"-Xmx256m": true, "-XX:+UseSerialGC": true, "-XX:TieredStopAtLevel=1": true}

// javaArgs returns java's flags before the classpath.
func javaArgs(st settings) []string {
	var args []string
	for _, f := range jvmFlags {
		if !st.defaultJVM || !smallJVMFlags[f] {
			args = append(args, f)
		}
	}
	return args
}

// process is one running java process. Its wait goroutine is the only
// goroutine it starts; it ends when the process has exited, and stop
// waits for it.
type process struct {
	cmd      *exec.Cmd
	logPath  string
	logStart int64         // size of the log file before this process wrote to it
	done     chan struct{} // closed by the wait goroutine after cmd.Wait returned
	err      error         // cmd.Wait's result; read only after done is closed
}

// startProcess runs java with the given main class and zoo.cfg in dir,
// appending its output to dir/zookeeper.log and, if log is not nil, to log.
func startProcess(inst installation, st settings, mainClass, dir string, log io.Writer) (*process, error) {
	logPath := filepath.Join(dir, logName)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zktest: open server log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("zktest: open server log: %w", err)
	}
	args := append(javaArgs(st), "-cp", inst.classpath, mainClass, cfgName)
	cmd := exec.Command(inst.java, args...)
	cmd.Dir = dir // also makes the server's `envi` report user.dir=dir
	var out io.Writer = f
	if log != nil {
		// exec copies through a pipe and Wait waits for the copy; WaitDelay
		// bounds that should anything else hold the pipe open.
		out = io.MultiWriter(f, log)
		cmd.WaitDelay = time.Second
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group, so that signals reach the whole group; and killed
	// when the thread that started it dies. (Pdeathsig follows the OS
	// thread, not the process. The Go runtime ends a thread only when a
	// goroutine exits while locked to it with runtime.LockOSThread, so in
	// practice the server dies with the program, even on SIGKILL.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("zktest: start java: %w", err)
	}
	p := &process{cmd: cmd, logPath: logPath, logStart: fi.Size(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited (and been waited for).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group unless the process has been
// reaped (its pid, and so the group id, could then be reused).
func (p *process) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop sends sig and waits for the process to exit. A SIGTERM that is not
// obeyed within stopWait is followed by SIGKILL.
func (p *process) stop(sig syscall.Signal) error {
	p.signal(sig)
	wait := killWait
	if sig != syscall.SIGKILL {
		wait = stopWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if sig == syscall.SIGKILL {
		return fmt.Errorf("zktest: pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, wait)
	}
	p.signal(syscall.SIGKILL)
	t.Reset(killWait)
	select {
	case <-p.done:
		return fmt.Errorf("zktest: pid %d ignored SIGTERM for %v; killed", p.cmd.Process.Pid, stopWait)
	case <-t.C:
		return fmt.Errorf("zktest: pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, killWait)
	}
}

// output returns up to the last limit bytes this process has written to its
// log file.
func (p *process) output(limit int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	from := max(p.logStart, fi.Size()-limit)
	b, _ := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if from > p.logStart {
		// Drop the partial first line.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// tail returns the last lines of the process's output, for error messages.
func (p *process) tail() string {
	const maxLines = 30
	lines := strings.Split(strings.TrimRight(p.output(8<<10), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// bindFailed reports whether the process failed to bind one of its ports,
// which happens when another process took a port between freePorts and
// the server's bind.
func (p *process) bindFailed() bool {
	return strings.Contains(p.output(1<<20), "Address already in use")
}

// describe wraps err with the process's exit status (if it exited) and
// the tail of its output.
func (p *process) describe(name string, err error) error {
	status := "running"
	if p.exited() {
		status = "exited: " + fmt.Sprint(p.err)
	}
	return fmt.Errorf("%s (%s): %w\n--- tail of %s ---\n%s", name, status, err, p.logPath, p.tail())
}

// waitReady waits until the process answers `ruok` with `imok` on addr and
// `envi` shows it runs in dir: a port race could otherwise let another
// server on the same port answer for it. If serving, it also waits until
// `srvr` reports a mode: a standalone server answers `ruok` while it is
// still loading its database, and drops clients until then.
func (p *process) waitReady(ctx context.Context, addr, dir string, serving bool) error {
	want := "user.dir=" + dir + "\n"
	ready := func() bool {
		if env, err := probe(ctx, addr, "envi"); err != nil || !strings.Contains(env, want) {
			return false
		}
		if ok, err := probe(ctx, addr, "ruok"); err != nil || ok != "imok" {
			return false
		}
		if !serving {
			return true
		}
		srvr, err := probe(ctx, addr, "srvr")
		return err == nil && parseMode(srvr) != ""
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for !ready() {
		if p.exited() { // first: a probe can take long enough for every case below to be ready
			return ErrExited
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: %s not ready: %w", addr, context.Cause(ctx))
		case <-p.done:
			return ErrExited
		case <-t.C:
		}
	}
	return nil
}

// probe is FourLetter with a short timeout of its own.
func probe(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return FourLetter(ctx, addr, word)
}

// withDefaultDeadline gives ctx a deadline of d if it has none.
func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// pickPorts chooses ports for new servers; tests replace it to stage a lost
// port race.
var pickPorts = freePorts

// freePorts returns n distinct loopback ports that were free a moment ago.
// All n listeners are open at once so that the ports differ.
//
// The ports come from below the kernel's range of ephemeral ports when it
// can tell that range: a server port from inside it, once the server
// stops, can become the source port of any outgoing connection (a
// client's, a proxy's, another server's), and the server could then not
// bind it again when it restarts, as happened in a chaos run.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := quietPorts()
	for tries := 0; len(ports) < n && hi > lo && tries < 100*n; tries++ {
		port := lo + rand.IntN(hi-lo)
		if slices.Contains(ports, port) {
			continue
		}
		if l, err := net.Listen("tcp", hostPort(port)); err == nil {
			ls = append(ls, l)
			ports = append(ports, port)
		}
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return nil, fmt.Errorf("zktest: pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// quietPorts returns the ports [lo, hi) below the kernel's ephemeral range
// that freePorts picks from, or an empty range if that range is unknown.
func quietPorts() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return 0, 0
	}
	hi = first
	lo = max(hi-12000, 10000)
	return lo, hi
}

// hostPort returns "127.0.0.1:port".
func hostPort(port int) string {
	return net.JoinHostPort(loopback, strconv.Itoa(port))
}
