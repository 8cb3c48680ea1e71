package zktest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// stageLostRace makes the next pickPorts call of StartEnsemble return ports
// of which the one at index taken is held by a listener, as if another process had taken
// it first; later calls pick free ports. It restores pickPorts at cleanup.
// Tests that use it must not run in parallel.
func stageLostRace(t *testing.T, taken int) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", zklaunch.Loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port = ln.Addr().(*net.TCPAddr).Port
	staged := false
	pickPorts = func(n int) ([]int, error) {
		ports, err := zklaunch.FreePorts(n)
		if err == nil && !staged {
			staged = true
			ports[taken] = port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = zklaunch.FreePorts })
	return port
}

func requireInstalled(t *testing.T) {
	t.Helper()
	if _, err := zklaunch.FindInstall(); err != nil {
		failStart(t, err)
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
