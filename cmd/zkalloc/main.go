// Command zkalloc looks at and changes a zkalloc consumer group in
// ZooKeeper, and runs the demo.
//
//	zkalloc [flags] status                 members, partitions, owners, hand-offs, hold records
//	zkalloc [flags] watch                  one line per change, until interrupted
//	zkalloc [flags] partitions list
//	zkalloc [flags] partitions add    topic:ids...   e.g. events:0-63 audit:0,5
//	zkalloc [flags] partitions remove topic:ids...
//	zkalloc demo [-servers s] [-v]          a local ZooKeeper and a few members
//
// Flags may come before or after the command. Exit status: 0 on success,
// 1 on an error (ZooKeeper unreachable within -timeout, no such group),
// 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zkservers"
	"github.com/zkalloc/zkalloc/rebalance"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// options are the flags every command takes.
type options struct {
	servers string
	root    string
	group   string
	json    bool
	timeout time.Duration
	auth    string
	verbose bool // demo only

	serversSet bool // -servers was given
}

const usageText = `usage: zkalloc [flags] command [args]

commands:
  status                         members, partitions per topic, owners, unowned
                                 partitions, hand-offs in progress, and hold
                                 records without a claim or of ended sessions.
                                 Do not delete claims (owners/) to unstick a
                                 hand-off: the holder only revokes, and nobody
                                 else takes the partition; restart the holder.
                                 Never delete hold records (holds/) while
                                 members run: two owners. Seats may be
                                 deleted (docs/departure.md).
  watch                          print one line per change until interrupted
  partitions list                the group's partition set
  partitions add topic:ids...    merge partitions into the set (ids: 0-63,70)
  partitions remove topic:ids... take partitions out of the set
  demo                           a local ZooKeeper and a few members in one
                                 process (-servers to use another ZooKeeper)

flags (before or after the command):
`

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("zkalloc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.servers, "servers", "127.0.0.1:2181", "ZooKeeper servers, comma-separated, optionally with a chroot (zk1:2181,zk2:2181/kafka)")
	fs.StringVar(&o.root, "root", zkalloc.DefaultRoot, "the root path of the groups (Config.Root)")
	fs.StringVar(&o.group, "group", "", "the consumer group")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for ZooKeeper (for watch: to connect)")
	fs.StringVar(&o.auth, "auth", "", "credentials as scheme:credentials, e.g. digest:user:secret")
	fs.BoolVar(&o.verbose, "v", false, "demo: log what the allocators do")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	return fs
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "zkalloc: no command")
		fs.Usage()
		return exitUsage
	}
	cmd := rest[0]
	// Flags may follow the command too, before its arguments.
	if err := fs.Parse(rest[1:]); err != nil {
		return exitUsage
	}
	rest = fs.Args()
	fs.Visit(func(f *flag.Flag) { o.serversSet = o.serversSet || f.Name == "servers" })
	err := dispatch(ctx, cmd, rest, o, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "zkalloc:", err)
		fmt.Fprintln(stderr, "run zkalloc -h for usage")
		return exitUsage
	default:
		fmt.Fprintln(stderr, "zkalloc:", err)
		return exitError
	}
}

func dispatch(ctx context.Context, cmd string, args []string, o options, stdout, stderr io.Writer) error {
	switch cmd {
	case "demo":
		if len(args) > 0 {
			return usagef("demo takes no arguments")
		}
		return demo(ctx, o, stdout)
	case "status", "watch", "partitions":
	default:
		return usagef("unknown command %q", cmd)
	}
	if o.group == "" {
		return usagef("%s needs -group", cmd)
	}
	if o.timeout <= 0 {
		return usagef("-timeout must be positive")
	}
	switch cmd {
	case "status":
		if len(args) > 0 {
			return usagef("status takes no arguments")
		}
		return withConn(ctx, o, func(c *client) error { return status(c, o, stdout) })
	case "watch":
		if len(args) > 0 {
			return usagef("watch takes no arguments")
		}
		return watch(ctx, o, stdout)
	}
	// partitions
	if len(args) == 0 {
		return usagef("partitions needs list, add or remove")
	}
	switch sub := args[0]; sub {
	case "list":
		if len(args) > 1 {
			return usagef("partitions list takes no arguments")
		}
		return withConn(ctx, o, func(c *client) error { return listPartitions(c, o, stdout) })
	case "add", "remove":
		change, err := parseTopicIDs(args[1:])
		if err != nil {
			return err
		}
		return withConn(ctx, o, func(c *client) error { return changePartitions(c, sub == "remove", change, o, stdout) })
	default:
		return usagef("unknown partitions command %q; want list, add or remove", sub)
	}
}

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

// connect opens a session, waiting until ctx ends, and adds the
// credentials.
func connect(ctx context.Context, o options) (*client, error) {
	addrs, chroot, err := zkservers.Parse([]string{o.servers})
	if err != nil {
		return nil, usagef("-servers: %v", err)
	}
	if err := zkpath.ValidateRoot(o.root); err != nil {
		return nil, usagef("-root %q: %v", o.root, err)
	}
	if err := rebalance.ValidateName(o.group); err != nil {
		return nil, usagef("-group %q: %v", o.group, err)
	}
	var scheme, cred string
	if o.auth != "" {
		var ok bool
		scheme, cred, ok = strings.Cut(o.auth, ":")
		if !ok || scheme == "" || cred == "" {
			return nil, usagef("-auth %q: want scheme:credentials, e.g. digest:user:secret", o.auth)
		}
	}
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	// The client drops events nobody reads; only the first session matters.
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
		return nil, fmt.Errorf("no session with ZooKeeper at %s: %w", strings.Join(addrs, ","), ctx.Err())
	}
	if scheme != "" {
		if err := conn.AddAuth(scheme, []byte(cred)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("-auth: %w", err)
		}
	}
	return &client{conn: conn, paths: zkpath.Group{Root: chroot + o.root, Group: o.group}}, nil
}

// quiet discards the ZooKeeper client's logs: the commands report errors
// themselves.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// errNoGroup is returned for a group with no node in ZooKeeper.
var errNoGroup = errors.New("no such group")

// checkGroup returns an error wrapping errNoGroup if the group has no
// node.
func (c *client) checkGroup() error {
	ok, _, err := c.conn.Exists(c.paths.Dir())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", errNoGroup, c.paths.Dir())
	}
	return nil
}
