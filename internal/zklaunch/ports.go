package zklaunch

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
)

// Loopback is the address local servers listen on.
const Loopback = "127.0.0.1"

// pickPorts chooses the port of a new [Server]; tests replace it to stage
// a lost port race.
var pickPorts = FreePorts

// FreePorts returns n distinct loopback ports that were free a moment ago.
// All n listeners are open at once so that the ports differ. Another
// process may take one before a server binds it: a server that then
// fails to bind says so ([Process.BindFailed]).
//
// The ports come from below the kernel's range of ephemeral ports when it
// can tell that range: a server port from inside it, once the server
// stops, can become the source port of any outgoing connection (a
// client's, a proxy's, another server's), and the server could then not
// bind it again when it restarts, as happened in a chaos run.
func FreePorts(n int) ([]int, error) {
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
		if l, err := net.Listen("tcp", HostPort(port)); err == nil {
			ls = append(ls, l)
			ports = append(ports, port)
		}
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", Loopback+":0")
		if err != nil {
			return nil, fmt.Errorf("zklaunch: pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// quietPorts returns the ports [lo, hi) below the kernel's ephemeral range
// that FreePorts picks from, or an empty range if that range is unknown.
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

// HostPort returns "127.0.0.1:port".
func HostPort(port int) string {
	return net.JoinHostPort(Loopback, strconv.Itoa(port))
}
