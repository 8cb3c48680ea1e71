package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zkservers"
	"github.com/zkalloc/zkalloc/rebalance"
)

// client is a connection to ZooKeeper and the group's paths.
type client struct {
	conn  *zk.Conn
	paths zkpath.Group
}

// withConn connects, runs f, and closes. The whole of it is bounded by
// -timeout.
func withConn(ctx context.Context, o options, f func(*client) error) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	c, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	done := make(chan error, 1)
	go func() { done <- f(c) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		c.conn.Close() // fails the requests in flight, so f returns
		<-done         //nolint:errcheck // its error is the closing's, not ZooKeeper's answer
		return fmt.Errorf("no answer from ZooKeeper within %v: %w", o.timeout, ctx.Err())
	}
}

// parseServers checks -servers, with errors that name the flag.
func parseServers(servers string) (addrs []string, chroot string, err error) {
	addrs, chroot, err = zkservers.Parse([]string{servers})
	if err != nil {
		// zkservers names the element of Config.Servers ("Servers[0]
		// \"a:b:c\": "); the flag is one element.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		msg := strings.ReplaceAll(err.Error(), " of Servers[0]", " earlier in the list")
		return nil, "", usagef("-servers %q: %s", servers, msg)
	}
	return addrs, chroot, nil
}

// connect opens a session, waiting until ctx ends, and adds the
// credentials. If ctx ends first, the error names the servers and wraps
// the last dial error, as the library's Start does.
func connect(ctx context.Context, o options) (*client, error) {
	addrs, chroot, err := parseServers(o.servers)
	if err != nil {
		return nil, err
	}
	if err := zkpath.ValidateRoot(o.root); err != nil {
		return nil, usagef("-root %q: want an absolute path such as /zkalloc, without a trailing '/', outside /zookeeper", o.root)
	}
	if err := rebalance.ValidateName(o.group); o.group != "" && err != nil {
		return nil, usagef("-group %q: %s", o.group, strings.TrimPrefix(err.Error(), fmt.Sprintf("%v name %q: ", rebalance.ErrInvalid, o.group)))
	}
	var scheme, cred string
	if o.auth != "" {
		var ok bool
		scheme, cred, ok = strings.Cut(o.auth, ":")
		if !ok || scheme == "" || cred == "" {
			return nil, usagef("-auth %q: want scheme:credentials, e.g. digest:user:secret", o.auth)
		}
	}
	var dials lastDial
	began := time.Now()
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false), zk.WithDialer(dials.dial))
	if err != nil {
		return nil, err
	}
	// The client drops events nobody reads; only the first session matters.
	// The goroutine drains events until the client closes the channel,
	// which conn.Close does: whoever closes conn ends it.
	up := make(chan struct{})
	go func() {
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				close(up)
				once = true
			}
		}
	}()
	select {
	case <-up:
	case <-ctx.Done():
		conn.Close()
		why := fmt.Sprintf("no session with ZooKeeper at %s after %v", strings.Join(addrs, ","), time.Since(began).Round(10*time.Millisecond))
		if last := dials.last(); last != nil {
			return nil, fmt.Errorf("%s: %w: %w", why, last, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %w", why, ctx.Err())
	}
	if scheme != "" {
		if err := conn.AddAuth(scheme, []byte(cred)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("-auth: %w", err)
		}
	}
	return &client{conn: conn, paths: zkpath.Group{Root: chroot + o.root, Group: o.group}}, nil
}

// lastDial dials as the client would and keeps the last error, for the
// message when no session comes up.
type lastDial struct {
	mu  sync.Mutex
	err error
}

func (d *lastDial) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
	}
	return c, err
}

func (d *lastDial) last() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// quiet discards the ZooKeeper client's logs: the commands report errors
// themselves.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// errNoGroup is wrapped by the error for a group with no node in
// ZooKeeper.
var errNoGroup = errors.New("no group")

// checkGroup returns an error wrapping errNoGroup if the group has no
// node: "no group G under ROOT (groups: a, b, c)".
func (c *client) checkGroup() error {
	ok, _, err := c.conn.Exists(c.paths.Dir())
	if err != nil {
		return err
	}
	if !ok {
		return c.noGroup()
	}
	return nil
}

// maxNamed bounds the groups a "no group" error names.
const maxNamed = 20

func (c *client) noGroup() error {
	groups, err := children(c.conn, c.paths.Root+"/groups")
	var have string
	switch {
	case err != nil:
		have = "groups unknown: " + err.Error()
	case len(groups) == 0:
		have = "no groups"
	case len(groups) > maxNamed:
		have = fmt.Sprintf("groups: %s, and %d more", strings.Join(groups[:maxNamed], ", "), len(groups)-maxNamed)
	default:
		have = "groups: " + strings.Join(groups, ", ")
	}
	return fmt.Errorf("%w %q under %s (%s)", errNoGroup, c.paths.Group, c.paths.Root, have)
}

// children lists a node's children, sorted; none if it does not exist.
func children(conn *zk.Conn, path string) ([]string, error) {
	names, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}
