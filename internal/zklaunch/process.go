package zklaunch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrExited is returned, wrapped, when a server process exits while it is
// being started.
var ErrExited = errors.New("zklaunch: server process exited")

// ErrClosed is returned, wrapped, by methods called after Close.
var ErrClosed = errors.New("zklaunch: closed")

const (
	// Main classes of a standalone server and of an ensemble member.
	standaloneMain = "org.apache.zookeeper.server.ZooKeeperServerMain"
	quorumMain     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

	logName = "zookeeper.log"
	cfgName = "zoo.cfg"

	// DefaultWait bounds a start or a wait whose context has no deadline.
	DefaultWait = 2 * time.Minute
	// stopWait bounds how long a stopped process may take to exit before
	// it is killed; killWait how long a killed one may take.
	stopWait = 10 * time.Second
	killWait = 10 * time.Second
	// pollInterval paces readiness polls.
	pollInterval = 25 * time.Millisecond
	// probeTimeout bounds one four-letter-word probe.
	probeTimeout = time.Second
)

// jvmFlags make a small JVM that starts quickly: a local ZooKeeper needs
// little heap and no optimizing compiler.
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

// smallJVMFlags are the flags of jvmFlags that [JVM.Default] leaves out.
var smallJVMFlags = map[string]bool{"-Xmx256m": true, "-XX:+UseSerialGC": true, "-XX:TieredStopAtLevel=1": true}

// JVM says how to run a server's java process.
type JVM struct {
	// Default starts the JVM with its own heap and compiler defaults, as
	// production runs ZooKeeper, instead of the small JVM without an
	// optimizing compiler that starts quickly. Such a server serves
	// several times the requests a second once warm.
	Default bool
	// Log, if not nil, also receives the server's output (ZooKeeper's log
	// at INFO level), each line prefixed with Name. The output always
	// goes to zookeeper.log in the server's directory too. Writes to Log
	// are serialized by this package and their errors are ignored, so a
	// failing Log never stalls a server.
	Log  io.Writer
	Name string
}

// javaArgs returns java's flags before the classpath.
func (j JVM) javaArgs() []string {
	var args []string
	for _, f := range jvmFlags {
		if !j.Default || !smallJVMFlags[f] {
			args = append(args, f)
		}
	}
	return args
}

// Process is one running java process of a ZooKeeper server. Its wait
// goroutine is the only goroutine it starts; it ends when the process has
// exited, and Stop waits for it. A Process is safe for concurrent use.
type Process struct {
	cmd      *exec.Cmd
	dir      string
	logPath  string
	logStart int64         // size of the log file before this process wrote to it
	done     chan struct{} // closed by the wait goroutine after cmd.Wait returned
	err      error         // cmd.Wait's result; read only after done is closed
}

// StartProcess runs a ZooKeeper server from the zoo.cfg in dir (see
// [Config.Write]) in the JVM of inst: a standalone server, or an ensemble
// member if quorum (its myid in its data directory). Its output is
// appended to dir/zookeeper.log. The process runs in its own process
// group with a parent-death signal, so it dies with this program. The
// caller must Stop it.
func StartProcess(inst Install, dir string, quorum bool, jvm JVM) (*Process, error) {
	logPath := filepath.Join(dir, logName)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zklaunch: open server log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("zklaunch: open server log: %w", err)
	}
	mainClass := standaloneMain
	if quorum {
		mainClass = quorumMain
	}
	args := append(jvm.javaArgs(), "-cp", inst.Classpath, mainClass, cfgName)
	cmd := exec.Command(inst.Java, args...)
	cmd.Dir = dir // also makes the server's `envi` report user.dir=dir
	var out io.Writer = f
	if jvm.Log != nil {
		// exec copies through a pipe and Wait waits for the copy; WaitDelay
		// bounds that should anything else hold the pipe open.
		out = io.MultiWriter(f, newPrefixWriter(jvm.Log, jvm.Name))
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
		return nil, fmt.Errorf("zklaunch: start java: %w", err)
	}
	p := &Process{cmd: cmd, dir: dir, logPath: logPath, logStart: fi.Size(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has exited (and been waited for).
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process group unless the process has been
// reaped (its pid, and so the group id, could then be reused).
func (p *Process) Signal(sig syscall.Signal) {
	if !p.Exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Stop sends sig (SIGTERM, as an operator stops a server, or SIGKILL, as
// a crash) and waits for the process to exit. A SIGTERM that is not obeyed
// within 10 s is followed by SIGKILL. Stopping a process that has exited
// does nothing.
func (p *Process) Stop(sig syscall.Signal) error {
	p.Signal(sig)
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
		return fmt.Errorf("zklaunch: pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, wait)
	}
	p.Signal(syscall.SIGKILL)
	t.Reset(killWait)
	select {
	case <-p.done:
		return fmt.Errorf("zklaunch: pid %d ignored SIGTERM for %v; killed", p.cmd.Process.Pid, stopWait)
	case <-t.C:
		return fmt.Errorf("zklaunch: pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, killWait)
	}
}

// output returns up to the last limit bytes this process has written to its
// log file.
func (p *Process) output(limit int64) string {
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

// Tail returns the last lines of the process's output, for error
// messages.
func (p *Process) Tail() string {
	const maxLines = 30
	lines := strings.Split(strings.TrimRight(p.output(8<<10), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// BindFailed reports whether the process failed to bind one of its
// ports, which happens when another process took a port between
// [FreePorts] and the server's bind.
func (p *Process) BindFailed() bool {
	return strings.Contains(p.output(1<<20), "Address already in use")
}

// Describe wraps err with the name of the server, the process's exit
// status (if it exited) and the tail of its output.
func (p *Process) Describe(name string, err error) error {
	status := "running"
	if p.Exited() {
		status = "exited: " + fmt.Sprint(p.err)
	}
	return fmt.Errorf("%s (%s): %w\n--- tail of %s ---\n%s", name, status, err, p.logPath, p.Tail())
}

// WaitReady waits until the process answers `ruok` with `imok` on addr
// and `envi` shows it runs in its directory: a port race could otherwise
// let another server on the same port answer for it. If serving, it also
// waits until `srvr` reports a mode: a standalone server answers `ruok`
// while it is still loading its database, and drops clients until then
// (an ensemble member reports a mode only once it has a quorum). It
// returns [ErrExited] if the process exits, and the context's cause if
// ctx ends first.
func (p *Process) WaitReady(ctx context.Context, addr string, serving bool) error {
	want := "user.dir=" + p.dir + "\n"
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
		mode, err := Mode(ctx, addr)
		return err == nil && mode != ""
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for !ready() {
		if p.Exited() { // first: a probe can take long enough for every case below to be ready
			return ErrExited
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zklaunch: %s not ready: %w", addr, context.Cause(ctx))
		case <-p.done:
			return ErrExited
		case <-t.C:
		}
	}
	return nil
}

// WithDefaultDeadline gives ctx a deadline d from now if it has none.
func WithDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
