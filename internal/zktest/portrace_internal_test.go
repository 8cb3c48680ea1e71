package zktest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// stageLostRace makes the next pickPorts call return ports of which the one
// at index taken is held by a listener, as if another process had taken
// it first; later calls pick free ports. It restores pickPorts at cleanup.
// Tests that use it must not run in parallel.
func stageLostRace(t *testing.T, taken int) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port = ln.Addr().(*net.TCPAddr).Port
	staged := false
	pickPorts = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err == nil && !staged {
			staged = true
			ports[taken] = port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	return port
}

func requireInstalled(t *testing.T) {
	t.Helper()
	if _, err := findInstallation(); err != nil {
		if errors.Is(err, ErrNotInstalled) && !OnCI() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

func TestStartServerRetriesLostPortRace(t *testing.T) {
	requireInstalled(t)
	taken := stageLostRace(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := StartServer(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Addr() == hostPort(taken) {
		t.Errorf("Addr() = %s, the taken port", s.Addr())
	}
}

func TestStartEnsembleRetriesLostPortRace(t *testing.T) {
	requireInstalled(t)
	// The election port of a one-member ensemble: the member answers ruok,
	// then fails to bind it and would exit only after retrying for seconds.
	taken := stageLostRace(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	begin := time.Now()
	e, err := StartEnsemble(ctx, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t.Logf("ensemble serving after a lost port race in %v", time.Since(begin).Round(time.Millisecond))
	if got := e.members[0].electionPort; got == taken {
		t.Errorf("election port = %d, the taken port", got)
	}
}

// Server ports come from below the ephemeral range, where no outgoing
// connection takes them while a stopped server is down.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	lo, hi := quietPorts()
	if hi <= lo {
		t.Skip("the kernel's ephemeral port range is unknown here")
	}
	ports, err := freePorts(9)
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
