package franzgo_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's ZooKeeper, as scripts/install-zookeeper.sh installs it. The
// main module's internal/zktest does more; an example module cannot import
// it.
const (
	zkJar     = "/usr/share/java/zookeeper.jar"
	zkConfDir = "/etc/zookeeper/conf"
)

// startZooKeeper starts a standalone ZooKeeper server on a free loopback
// port (tickTime 500 ms, so sessions may time out in 1 s) and returns its
// address once it serves clients. The test's cleanup stops it. Without
// ZooKeeper the test is skipped, or fails under CI=true.
func startZooKeeper(t *testing.T) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err == nil {
		_, err = os.Stat(zkJar)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ZooKeeper not installed (scripts/install-zookeeper.sh): %v", err)
		}
		t.Skipf("ZooKeeper not installed (scripts/install-zookeeper.sh): %v", err)
	}
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nforceSync=no\n",
		filepath.Join(dir, "data"), port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", zkConfDir+":"+zkJar, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})

	// A server answers ruok before it serves; srvr names its mode once it does.
	deadline := time.Now().Add(60 * time.Second)
	for {
		reply, _ := fourLetter(addr, "srvr")
		if strings.Contains(reply, "Mode: standalone") {
			return addr
		}
		select {
		case <-exited:
			t.Fatalf("ZooKeeper exited while starting; its output:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ZooKeeper at %s did not serve within 60 s; its output:\n%s", addr, log.String())
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// fourLetter sends one of ZooKeeper's four-letter commands and returns the
// reply.
func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cutter is a TCP proxy between one member and ZooKeeper. Cut drops its
// connections with a reset and refuses new ones: to ZooKeeper, the member's
// process has died, and its session expires after the session timeout.
type cutter struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []*net.TCPConn
	cut    bool
	wg     sync.WaitGroup
}

func newCutter(target string) (*cutter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &cutter{l: l, target: target}
	c.wg.Add(1)
	go c.accept()
	return c, nil
}

func (c *cutter) Addr() string { return c.l.Addr().String() }

func (c *cutter) accept() {
	defer c.wg.Done()
	for {
		in, err := c.l.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", c.target, time.Second)
		if err != nil {
			in.Close()
			continue
		}
		c.mu.Lock()
		if c.cut {
			c.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		c.conns = append(c.conns, in.(*net.TCPConn), out.(*net.TCPConn))
		c.wg.Add(2)
		c.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer c.wg.Done()
			io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(in, out)
		go pipe(out, in)
	}
}

// Cut resets every connection and refuses new ones.
func (c *cutter) Cut() {
	c.mu.Lock()
	c.cut = true
	for _, conn := range c.conns {
		conn.SetLinger(0) // a reset, as when a process dies
		conn.Close()
	}
	c.mu.Unlock()
	c.l.Close()
	c.wg.Wait()
}
