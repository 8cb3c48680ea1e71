// Package zkservers parses ZooKeeper connect strings, for the library's
// Config.Servers and the zkalloc command's -servers flag.
package zkservers

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/internal/zkpath"
)

// defaultPort is ZooKeeper's client port, used for a server given without
// one.
const defaultPort = "2181"

// Parse checks a list of ZooKeeper servers (zkalloc.Config.Servers) and
// returns the addresses to dial, as "host:port" ("[v6]:port" for IPv6), and the chroot they carry ("" for
// none). Each element is a server or a comma-separated list of them, as in
// a ZooKeeper connect string, and any server may end in a chroot path;
// servers that carry one must carry the same one, and it applies to all.
// The errors name the element and its value.
func Parse(servers []string) (addrs []string, chroot string, err error) {
	if len(servers) == 0 {
		return nil, "", errors.New("Servers: empty")
	}
	chrootOf := -1 // the element chroot came from
	for i, elem := range servers {
		bad := func(err error) error {
			return fmt.Errorf("Servers[%d] %q: %w", i, elem, err)
		}
		if strings.ContainsAny(elem, " \t\r\n") {
			return nil, "", bad(errors.New("contains white space"))
		}
		for _, s := range strings.Split(elem, ",") {
			hostPort, root, hasRoot := strings.Cut(s, "/")
			addr, err := parseServer(hostPort)
			if err != nil {
				return nil, "", bad(err)
			}
			addrs = append(addrs, addr)
			if !hasRoot {
				continue
			}
			root = "/" + root
			if root == "/" {
				root = "" // ZooKeeper's clients read a chroot of "/" as none
			} else if err := zkpath.ValidateRoot(root); err != nil {
				return nil, "", bad(fmt.Errorf("chroot %q: %w", root, err))
			}
			if chrootOf >= 0 && root != chroot {
				return nil, "", bad(fmt.Errorf("chroot %q differs from %q of Servers[%d]", root, chroot, chrootOf))
			}
			chroot, chrootOf = root, i
		}
	}
	return addrs, chroot, nil
}

// parseServer checks one "host", "host:port", "[v6]" or "[v6]:port" and
// returns it as "host:port".
func parseServer(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty server; want host or host:port")
	}
	host, port := s, defaultPort
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", fmt.Errorf("server %q: no ']' after an IPv6 address", s)
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", fmt.Errorf("server %q: want [address]:port", s)
			}
			port = p
		}
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() {
			return "", fmt.Errorf("server %q: %q in brackets is not an IPv6 address", s, host)
		}
	case strings.Count(s, ":") > 1:
		return "", fmt.Errorf("server %q: want host:port, with an IPv6 address in brackets ([::1]:2181)", s)
	case strings.Contains(s, ":"):
		host, port, _ = strings.Cut(s, ":")
	}
	if host == "" {
		return "", fmt.Errorf("server %q: no host", s)
	}
	if strings.ContainsAny(host, "[]") {
		return "", fmt.Errorf("server %q: brackets only around an IPv6 address", s)
	}
	if err := checkPort(port); err != nil {
		return "", fmt.Errorf("server %q: %w", s, err)
	}
	return net.JoinHostPort(host, port), nil
}

// checkPort accepts decimal 1 to 65535.
func checkPort(port string) error {
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return fmt.Errorf("port %q is not a number", port)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %s is out of range 1 to 65535", port)
	}
	return nil
}
