package zklaunch

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// skipIfNotInstalled skips the test when err says ZooKeeper is not
// installed, outside CI (CI=true): under CI, a missing ZooKeeper fails.
func skipIfNotInstalled(t *testing.T, err error) {
	t.Helper()
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); errors.Is(err, ErrNotInstalled) && !ci {
		t.Skip(err)
	}
}

func ruok(t *testing.T, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := FourLetter(ctx, addr, "ruok")
	if err == nil && reply != "imok" {
		err = errors.New("ruok: " + reply)
	}
	return err
}

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	begin := time.Now()
	s, err := StartServer(ctx, Options{})
	if err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	t.Logf("standalone server ready in %v", time.Since(begin).Round(time.Millisecond))
	defer s.Close()
	addr := s.Addr()
	if err := ruok(t, addr); err != nil {
		t.Fatal(err)
	}
	srvr, err := FourLetter(ctx, addr, "srvr")
	if err != nil || !strings.Contains(srvr, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want Mode: standalone", srvr, err)
	}
	if _, err := FourLetter(ctx, addr, "toolong"); err == nil {
		t.Error("FourLetter with a 7-letter word: no error")
	}

	for _, halt := range []struct {
		name string
		f    func() error
	}{{"Stop", s.Stop}, {"Kill", s.Kill}} {
		if err := halt.f(); err != nil {
			t.Fatalf("%s: %v", halt.name, err)
		}
		if s.Running() {
			t.Errorf("Running() after %s = true", halt.name)
		}
		if err := ruok(t, addr); err == nil {
			t.Errorf("ruok answered after %s", halt.name)
		}
		if err := halt.f(); err != nil {
			t.Errorf("second %s: %v", halt.name, err)
		}
		begin = time.Now()
		if err := s.Start(ctx); err != nil {
			t.Fatalf("Start after %s: %v", halt.name, err)
		}
		t.Logf("restart after %s ready in %v", halt.name, time.Since(begin).Round(time.Millisecond))
		if got := s.Addr(); got != addr {
			t.Errorf("Addr() after restart = %q, want %q", got, addr)
		}
		if err := ruok(t, addr); err != nil {
			t.Errorf("after restart: %v", err)
		}
		if err := s.Start(ctx); err != nil {
			t.Errorf("Start while running: %v", err)
		}
	}

	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := ruok(t, addr); err == nil {
		t.Error("ruok answered after Close")
	}
	if err := s.Start(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop after Close: %v", err)
	}
}

func TestStartServerRetriesLostPortRace(t *testing.T) {
	if _, err := FindInstall(); err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", Loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	lost := false
	pickPorts = func(n int) ([]int, error) {
		if !lost {
			lost = true // as if another process had taken the port first
			return []int{taken}, nil
		}
		return FreePorts(n)
	}
	defer func() { pickPorts = FreePorts }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := StartServer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Addr() == HostPort(taken) {
		t.Errorf("Addr() = %s, the taken port", s.Addr())
	}
}

// Server ports come from below the ephemeral range, where no outgoing
// connection takes them while a stopped server is down.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	lo, hi := quietPorts()
	if hi <= lo {
		t.Skip("the kernel's ephemeral port range is unknown here")
	}
	ports, err := FreePorts(9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi || seen[p] {
			t.Errorf("ports %v: want 9 distinct ones in [%d, %d)", ports, lo, hi)
			break
		}
		seen[p] = true
	}
}
