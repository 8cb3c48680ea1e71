// Command zkalloc looks at and changes a zkalloc consumer group in
// ZooKeeper, and runs the demo.
//
//	zkalloc [flags] status [-check]        members, partitions, owners, hand-offs, hold records
//	zkalloc [flags] watch                  one line per change, until interrupted
//	zkalloc [flags] drain MEMBER...        move every partition off members (sticky strategy)
//	zkalloc [flags] undrain MEMBER...      give drained members a share again
//	zkalloc [flags] partitions list
//	zkalloc [flags] partitions add [-create] topic:ids...   e.g. events:0-63 audit:0,5
//	zkalloc [flags] partitions remove topic:ids...
//	zkalloc [flags] groups list
//	zkalloc [flags] groups delete G
//	zkalloc demo [-servers s] [-v]          a local ZooKeeper and a few members
//	zkalloc version
//	zkalloc help [command]
//
// Flags may come before or after the command. Exit status: 0 on success,
// 1 on a failure (ZooKeeper unreachable within -timeout, no such group,
// a write refused), 2 on bad usage, 3 when status -check finds a problem.
// zkalloc help says more.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitProblem = 3 // status -check found a problem
)

// usageError is a bad command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// errProblems is returned by status -check when it found problems, which
// it has printed: exit code 3.
var errProblems = errors.New("status -check found problems")

// defaultTimeout bounds a command's wait for ZooKeeper: short, so that a
// script learns soon that a server is unreachable; a library member waits
// as long as its Start's ctx allows.
const defaultTimeout = 5 * time.Second

// defaultMaxHandoffAge is status -check's bound on a hand-off's age: above
// the longest one takes with the library's defaults (3 × ReleaseTimeout
// + the session timeout + 10 s: 110 s with a ReleaseTimeout of 30 s).
const defaultMaxHandoffAge = 2 * time.Minute

// options are the flags every command takes.
type options struct {
	servers       string
	root          string
	group         string
	json          bool
	timeout       time.Duration
	auth          string
	verbose       bool          // demo only
	create        bool          // partitions add only
	check         bool          // status only
	maxHandoffAge time.Duration // status -check only

	set map[string]bool // the flags given
}

func newFlags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("zkalloc", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the errors and the help
	fs.StringVar(&o.servers, "servers", "127.0.0.1:2181", "ZooKeeper servers, comma-separated, optionally with a chroot (zk1:2181,zk2:2181/kafka)")
	fs.StringVar(&o.root, "root", "/zkalloc", "the ZooKeeper path under which the groups live, as the members' Root")
	fs.StringVar(&o.group, "group", "", "the consumer group (status, watch, partitions, drain, undrain)")
	fs.BoolVar(&o.json, "json", false, "print JSON (status, watch, partitions, groups list, version)")
	fs.DurationVar(&o.timeout, "timeout", defaultTimeout, "how long to wait for ZooKeeper (for watch: to connect)")
	fs.StringVar(&o.auth, "auth", "", "credentials as scheme:credentials, e.g. digest:user:secret")
	fs.BoolVar(&o.verbose, "v", false, "demo: log what the allocators do")
	fs.BoolVar(&o.create, "create", false, "partitions add: create the group if it does not exist")
	fs.BoolVar(&o.check, "check", false, "status: print only the problems, one a line, and exit 3 if there is one")
	fs.DurationVar(&o.maxHandoffAge, "max-handoff-age", defaultMaxHandoffAge, "status -check: a hand-off older than this is a problem")
	return fs
}

// flagsOf are the flags that apply to one command only, with the
// commands they apply to; the others apply to every command that talks
// to ZooKeeper.
var flagsOf = map[string][]string{
	"v":               {"demo"},
	"create":          {"partitions add"},
	"check":           {"status"},
	"max-handoff-age": {"status"},
	"group":           {"status", "watch", "partitions list", "partitions add", "partitions remove", "drain", "undrain"},
	"json":            {"status", "watch", "partitions list", "partitions add", "partitions remove", "groups list", "version"},
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlags(&o)
	// Flags may come before the command, after it and after its
	// subcommand (partitions add), before the arguments.
	var words []string // the command and its subcommand
	var err error
	rest := args
	for {
		if err = fs.Parse(rest); err != nil {
			break
		}
		rest = fs.Args()
		if len(rest) == 0 || len(words) == 2 || len(words) == 1 && subcommands[words[0]] == nil {
			break
		}
		words, rest = append(words, rest[0]), rest[1:]
	}
	var cmd string
	if len(words) > 0 {
		cmd = words[0]
		rest = append(words[1:], rest...)
	}
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the help of the command, if any
		return help(cmd, fs, stdout, stderr)
	case err != nil:
		fmt.Fprintln(stderr, "zkalloc:", err)
		fmt.Fprintln(stderr, "run zkalloc help for usage")
		return exitUsage
	case cmd == "":
		fmt.Fprintln(stderr, "zkalloc: no command")
		printUsage(fs, stderr)
		return exitUsage
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if cmd == "help" {
		if len(rest) > 1 {
			fmt.Fprintln(stderr, "zkalloc: help takes at most one command")
			return exitUsage
		}
		topic := ""
		if len(rest) == 1 {
			topic = rest[0]
		}
		return help(topic, fs, stdout, stderr)
	}
	err = dispatch(ctx, cmd, rest, o, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errProblems):
		return exitProblem
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "zkalloc:", err)
		if _, ok := helps[cmd]; ok {
			fmt.Fprintf(stderr, "run zkalloc help %s for usage\n", cmd)
		} else {
			fmt.Fprintln(stderr, "run zkalloc help for usage")
		}
		return exitUsage
	default:
		fmt.Fprintln(stderr, "zkalloc:", err)
		return exitError
	}
}

// checkFlags refuses the flags given that do not apply to cmd (with its
// subcommand, e.g. "partitions add").
func checkFlags(cmd string, o options) error {
	for name, cmds := range flagsOf {
		if o.set[name] && !slices.Contains(cmds, cmd) {
			return usagef("-%s does not apply to %s (only to %s)", name, cmd, strings.Join(cmds, ", "))
		}
	}
	if o.set["max-handoff-age"] && !o.check {
		return usagef("-max-handoff-age applies with -check")
	}
	if o.set["max-handoff-age"] && o.maxHandoffAge <= 0 {
		return usagef("-max-handoff-age must be positive")
	}
	if o.timeout <= 0 {
		return usagef("-timeout must be positive")
	}
	return nil
}

func dispatch(ctx context.Context, cmd string, args []string, o options, stdout, stderr io.Writer) error {
	full := cmd // with the subcommand
	switch cmd {
	case "partitions", "groups":
		if len(args) == 0 || !slices.Contains(subcommands[cmd], args[0]) {
			return usagef("%s needs one of: %s", cmd, strings.Join(subcommands[cmd], ", "))
		}
		full, args = cmd+" "+args[0], args[1:]
	case "status", "watch", "demo", "version", "drain", "undrain":
	default:
		return usagef("unknown command %q", cmd)
	}
	if err := checkFlags(full, o); err != nil {
		return err
	}
	var change map[string][]int32
	var members []string // drain, undrain
	switch full {
	case "partitions add", "partitions remove":
		if len(args) == 0 {
			return usagef("%s needs topic:ids arguments, e.g. events:0-63 audit:0,5", full)
		}
		var err error
		if change, err = parseTopicIDs(args); err != nil {
			return err
		}
	case "drain", "undrain":
		var err error
		if members, err = parseMemberNames(full, args); err != nil {
			return err
		}
	case "groups delete":
		if len(args) != 1 {
			return usagef("groups delete takes one group")
		}
		o.group = args[0]
	default:
		if len(args) > 0 {
			return usagef("%s takes no arguments", full)
		}
	}
	if o.group == "" && slices.Contains(flagsOf["group"], full) {
		return usagef("%s needs -group", full)
	}
	switch full {
	case "demo":
		return demo(ctx, o, stdout)
	case "version":
		return version(o, stdout)
	case "groups list":
		return withConn(ctx, o, func(c *client) error { return listGroups(c, o, stdout) })
	case "groups delete":
		return withConn(ctx, o, func(c *client) error { return deleteGroup(c, stdout) })
	case "status":
		return withConn(ctx, o, func(c *client) error { return status(c, o, stdout) })
	case "watch":
		return watch(ctx, o, stdout)
	case "drain":
		return withConn(ctx, o, func(c *client) error { return drain(c, members, stdout, stderr) })
	case "undrain":
		return withConn(ctx, o, func(c *client) error { return undrain(c, members, stdout, stderr) })
	case "partitions list":
		return withConn(ctx, o, func(c *client) error { return listPartitions(c, o, stdout) })
	default: // partitions add, remove
		remove := full == "partitions remove"
		return withConn(ctx, o, func(c *client) error { return changePartitions(c, remove, change, o, stdout, stderr) })
	}
}

// subcommands are those of the commands that have them.
var subcommands = map[string][]string{
	"partitions": {"list", "add", "remove"},
	"groups":     {"list", "delete"},
}
