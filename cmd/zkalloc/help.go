package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/zkalloc/zkalloc/rebalance"
)

// commandHelp is what help says of one command: the lines of its
// synopsis, each with a summary, and the text of zkalloc help <command>.
type commandHelp struct {
	synopsis [][2]string
	text     string
}

// order is the order of the commands in the help.
var order = []string{"status", "watch", "partitions", "drain", "undrain", "groups", "demo", "version", "help"}

var helps = map[string]commandHelp{
	"status": {
		synopsis: [][2]string{{"status [-check [-max-handoff-age D]]", "members, partitions, owners, hand-offs with their age, hold records"}},
		text: `Reads the group once: its members (name, host, pid, session, strategy,
version, age of the member node, weight, whether drained, the claims it
holds and, if the group has an assignment record, its partitions in the
record), drain marks of names not live, the record's generation and the
zxids of the views it was computed for, the partitions per topic, the
owner of each partition, the partitions nobody owns, claims on
partitions no longer in the set, and the hand-offs in progress with
their age (how long the group has been on its current members and set:
the newest member node, seat, topic change or, for the sticky strategy,
drain mark; "?" when the newest change is a departure or an undrain,
which ZooKeeper does not date, and no claim taken since dates it).
Hand-offs are known for the built-in strategies: the stateless ones are
run by the command, and the sticky one's assignment record is read.

Do not delete claims (owners/) to unstick a hand-off: the holder only
revokes, and nobody else takes the partition; restart the holder. Never
delete hold records (holds/) while members run: two owners. Seats may be
deleted (docs/departure.md).

With -check, it prints only the problems, one a line, and exits 3 if
there is one (0 and one "ok" line if not): the partitions nobody owns
that no hand-off explains (no member runs, or the members' strategy is
unknown), and each hand-off older than -max-handoff-age (default 2m,
above the longest a hand-off takes with the library's defaults). A
hand-off of unknown age is not counted. Partitions
paused for the seats of departed members (DepartureDelay) are no problem.`,
	},
	"watch": {
		synopsis: [][2]string{{"watch", "one line per change, until interrupted"}},
		text: `Prints one line per change until interrupted: members joining and
leaving, drained and undrained, topics and partitions added and removed,
claims taken and released. A burst of changes may print as one line.
-timeout bounds only the connection.`,
	},
	"partitions": {
		synopsis: [][2]string{
			{"partitions list", "the group's partition set"},
			{"partitions add [-create] topic:ids...", "merge partitions into the set (ids: 0-63,70)"},
			{"partitions remove topic:ids...", "take partitions out of the set"},
		},
		text: `Each argument is topic:ids, the IDs as ascending ranges and single
IDs: events:0-63,70. IDs are 0 to 2147483647, at most 1048576 (2^20) in a
topic and in the whole set. ` + topicRule + `

add refuses a group that does not exist, so that a misspelt -group
creates nothing; -create creates it, to seed a set before the first
member starts. remove takes out those of the partitions given that are in
the set and names the others on stderr ("not in the set"); it exits 0 all
the same, since they are not in the set either way. Both print the set
after the change. Running members see the change at once.`,
	},
	"drain": {
		synopsis: [][2]string{{"drain MEMBER...", "move every partition off members, with the usual hand-off"}},
		text: `Sets a drain mark for each member named: the persistent node
drained/<member>, whose data says when and from which host. Members of
the sticky strategy give a drained member no share: its partitions move
to the others with the usual graceful hand-off, the fewest that must.
The mark outlives the member's restarts; zkalloc undrain removes it.

drain checks every name first and writes all marks in one transaction,
or none. It refuses (exit 1, nothing drained) a group that does not
exist; a member the group does not know (not a live member, not a seat,
not in the assignment record, not drained); a group whose live members
run a stateless strategy (balanced, range, round-robin), which reads no
marks; and a drain that would leave no live member undrained, since the
partitions would then have nobody: undrain another member first. A bad
member name is bad usage (exit 2). Draining a member already drained is
no error: it says so on stderr and exits 0.`,
	},
	"undrain": {
		synopsis: [][2]string{{"undrain MEMBER...", "give drained members a share again"}},
		text: `Deletes the drain marks of the members named (drained/<member>), in
one transaction: members of the sticky strategy give each a share again,
moved to it with the usual hand-off, the fewest that must; a member that
returns takes back the partitions it had, as far as that allows.
Undraining a member that is not drained is no error: it says so on
stderr and exits 0.`,
	},
	"groups": {
		synopsis: [][2]string{
			{"groups list", "the groups under -root, with their members and partitions"},
			{"groups delete G", "delete group G and all under it; refused while it has members"},
		},
		text: `groups list prints each group under -root with its live members and
its partitions.

groups delete G deletes the group's node and everything under it:
partitions, seats, hold records, claims. It refuses a group with live
members, naming them, or with claims still held; stop the members first.
A member that joins while the group is being deleted stops the delete
(exit 1); run it again once that member is stopped. -timeout bounds the
whole delete: give a group of many thousand partitions more than 5s.`,
	},
	"demo": {
		synopsis: [][2]string{{"demo [-v]", "a local ZooKeeper and a few members in one process"}},
		text: `Starts a throwaway local ZooKeeper (or uses the one given with -servers),
runs a few members in this process, adds and removes partitions, and
prints every Update each member receives. -v logs what the members do.`,
	},
	"version": {
		synopsis: [][2]string{{"version", "the version of zkalloc and of Go it was built with"}},
		text:     `Prints the zkalloc module's version, "(devel)" for a build from a checkout without version control information, and the Go version.`,
	},
	"help": {
		synopsis: [][2]string{{"help [command]", "this text, or one command's; -h after a command too"}},
		text:     `Prints the usage, or one command's.`,
	},
}

// topicRule is the rule on topic names, as help states it.
var topicRule = `Topic names are 1 to ` + fmt.Sprint(rebalance.MaxNameLen) + ` bytes of ` + rebalance.TopicChars + `,
not "." or "..".`

const exitText = `exit status:
  0  success
  1  failure: ZooKeeper unreachable within -timeout, no such group,
     a write refused, a drain refused
  2  bad usage
  3  status -check found a problem
`

// printUsage prints the whole usage to w.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, "usage: zkalloc [flags] command [args]\n\ncommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range order {
		for _, s := range helps[name].synopsis {
			fmt.Fprintf(tw, "  %s\t%s\n", s[0], s[1])
		}
	}
	_ = tw.Flush() // as fmt.Fprint: nothing to do on failure
	fmt.Fprint(w, "\nflags (before or after the command):\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintf(w, "\n%s\n%s\nzkalloc help <command> says more of one.\n", exitText, topicRule)
}

// help prints the usage of topic, or all of it for "", to stdout, and
// returns the exit code.
func help(topic string, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if topic == "" {
		printUsage(fs, stdout)
		return exitOK
	}
	h, ok := helps[topic]
	if !ok {
		fmt.Fprintf(stderr, "zkalloc: no command %q; commands: %s\n", topic, strings.Join(order, ", "))
		return exitUsage
	}
	fmt.Fprintln(stdout, "usage:")
	for _, s := range h.synopsis {
		fmt.Fprintf(stdout, "  zkalloc [flags] %s\n", s[0])
	}
	fmt.Fprintf(stdout, "\n%s\n\nzkalloc help lists the flags and the exit codes.\n", h.text)
	return exitOK
}

// buildVersion is what version prints.
type buildVersion struct {
	Version  string `json:"version"`            // of the zkalloc module; "(devel)" if unknown
	Revision string `json:"revision,omitempty"` // the commit, if the build recorded it
	Modified bool   `json:"modified,omitempty"` // built from a tree with changes
	Go       string `json:"go"`
}

func readVersion() buildVersion {
	v := buildVersion{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func version(o options, w io.Writer) error {
	v := readVersion()
	if o.json {
		return encodeJSON(w, v, false)
	}
	rev := ""
	if v.Revision != "" {
		rev = " (" + v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			rev += ", modified"
		}
		rev += ")"
	}
	_, err := fmt.Fprintf(w, "zkalloc %s%s %s\n", v.Version, rev, v.Go)
	return err
}

// encodeJSON writes v as JSON to w without escaping <, > and & (the
// version's "=>", a name's "<"): the output is read by people and
// programs, not embedded in HTML.
func encodeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}
