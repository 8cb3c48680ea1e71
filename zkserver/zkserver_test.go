package zkserver_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/zkserver"
)

const debianJar = "/usr/share/java/zookeeper.jar"

// connect opens a client session to servers and waits until it is
// connected.
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %v after 30 s", servers)
		}
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	s := zkserver.Start(t)
	servers := s.Servers()
	if len(servers) != 1 || !strings.HasPrefix(servers[0], "127.0.0.1:") {
		t.Fatalf("Servers() = %q, want one 127.0.0.1 address", servers)
	}
	conn := connect(t, servers)
	if _, err := conn.Create("/zkserver", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop again: %v", err)
	}
	if c, err := net.DialTimeout("tcp", servers[0], time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", servers[0])
	}
}

func TestStartEnsemble(t *testing.T) {
	t.Parallel()
	s := zkserver.StartEnsemble(t, 3)
	servers := s.Servers()
	if len(servers) != 3 {
		t.Fatalf("Servers() = %q, want 3", servers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var modes []string
	for _, a := range servers {
		m, err := zklaunch.Mode(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		modes = append(modes, m)
	}
	if !zklaunch.AllServing(modes) {
		t.Fatalf("modes %q: want one leader and two followers", modes)
	}
	// A write through one server is read through another.
	if _, err := connect(t, servers[:1]).Create("/zkserver", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, servers[2:])
	if _, err := conn.Sync("/zkserver"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := conn.Get("/zkserver"); err != nil || string(got) != "x" {
		t.Fatalf("Get through %s = %q, %v; want x", servers[2], got, err)
	}
	for range 2 {
		if err := s.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	for _, a := range servers {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", a)
		}
	}
}

// A jar named by the option or the environment runs.
func TestJar(t *testing.T) {
	if _, err := os.Stat(debianJar); err != nil {
		t.Skipf("no %s to run as a named jar", debianJar)
	}
	t.Run("option", func(t *testing.T) {
		connect(t, zkserver.Start(t, zkserver.Jar(debianJar), zkserver.Required()).Servers())
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv(zkserver.JarEnv, debianJar)
		connect(t, zkserver.Start(t, zkserver.Required()).Servers())
	})
}

// recorder is a testing.TB that records how a test ended instead of
// ending it.
type recorder struct {
	testing.TB
	mu              sync.Mutex
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// With ZooKeeper or Java missing, a test skips, saying what to install,
// unless it is required or runs under CI: then it fails.
func TestMissing(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		opts     []zkserver.Option
		wantSkip bool
	}{
		{"no jar", map[string]string{"CI": "", zkserver.JarEnv: "/nonexistent/zookeeper.jar"}, nil, true},
		{"no java", map[string]string{"CI": "", "PATH": t.TempDir()}, []zkserver.Option{zkserver.Jar(debianJar)}, true},
		{"no jar, CI", map[string]string{"CI": "true", zkserver.JarEnv: "/nonexistent/zookeeper.jar"}, nil, false},
		{"no jar, Required", map[string]string{"CI": "", zkserver.JarEnv: "/nonexistent/zookeeper.jar"}, []zkserver.Option{zkserver.Required()}, false},
		{"no java, ensemble, CI", map[string]string{"CI": "1", "PATH": t.TempDir()}, []zkserver.Option{zkserver.Jar(debianJar)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(debianJar); err != nil && strings.Contains(tt.name, "java") {
				t.Skipf("no %s: the jar must be there for java to be what is missing", debianJar)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if strings.Contains(tt.name, "ensemble") {
					zkserver.StartEnsemble(r, 3, tt.opts...)
				} else {
					zkserver.Start(r, tt.opts...)
				}
			}()
			<-done
			got := r.failed
			if tt.wantSkip {
				got = r.skipped
			}
			if got == "" {
				t.Fatalf("skipped %q, failed %q; want a skip: %v", r.skipped, r.failed, tt.wantSkip)
			}
			if !strings.Contains(got, "install Java and ZooKeeper") || !strings.Contains(got, zkserver.JarEnv) {
				t.Errorf("message %q does not say what to install", got)
			}
			t.Log(got)
		})
	}
}
