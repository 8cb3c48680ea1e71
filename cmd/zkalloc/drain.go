package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/rebalance"
)

// stickyStrategy is the name members of the sticky strategy give in
// their node (membership.Info.Strategy): the only strategy that reads
// drain marks.
const stickyStrategy = "sticky"

// drainMark is a drain mark's data, drained/<member>: when and from
// which host it was set, for the operator. Members read only the mark's
// name.
type drainMark struct {
	Name string `json:"name"`
	At   string `json:"at,omitempty"`   // RFC 3339, UTC
	Host string `json:"host,omitempty"` // where zkalloc drain ran
}

// since says when and where a mark was set, as far as its data says.
func (m drainMark) since() string {
	var s []string
	if m.At != "" {
		s = append(s, "since "+m.At)
	}
	if m.Host != "" {
		s = append(s, "from host "+m.Host)
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// markData is the data of a new drain mark.
func markData(now time.Time) []byte {
	host, _ := os.Hostname() // "" if unknown: the mark is no less a mark
	b, _ := json.Marshal(drainMark{At: now.UTC().Format(time.RFC3339), Host: host})
	return b
}

// parseMemberNames checks the names given to drain or undrain, as
// member names (exit 2 for a bad one), and drops repeats.
func parseMemberNames(cmd string, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, usagef("%s needs one or more member names", cmd)
	}
	var names []string
	for _, a := range args {
		if err := rebalance.ValidateName(a); err != nil {
			return nil, usagef("member %q: not a valid member name: %s", a, strings.TrimPrefix(err.Error(), fmt.Sprintf("%v name %q: ", rebalance.ErrInvalid, a)))
		}
		if len(a) > rebalance.MaxNameLen {
			return nil, usagef("member %q: not a valid member name: longer than %d bytes", a, rebalance.MaxNameLen)
		}
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	return names, nil
}

// readMarks reads the group's drain marks, by name; none if drained/
// does not exist. A mark whose data is not a drainMark is a mark all the
// same (members read only its name), shown without a date.
func readMarks(c *client) (map[string]drainMark, error) {
	names, err := children(c.conn, c.paths.Drained())
	if err != nil {
		return nil, err
	}
	reads := make([]nodeRead, len(names))
	inflight.Do(len(names), func(i int) {
		reads[i].data, _, reads[i].err = c.conn.Get(c.paths.DrainedMember(names[i]))
	})
	marks := map[string]drainMark{}
	for i, n := range names {
		switch r := reads[i]; {
		case errors.Is(r.err, zk.ErrNoNode): // undrained since listed
		case r.err != nil:
			return nil, r.err
		default:
			var m drainMark
			_ = json.Unmarshal(r.data, &m) // unreadable: no date
			m.Name = n
			marks[n] = m
		}
	}
	return marks, nil
}

// readDrainsAndRecord reads the drain marks and the assignment record's
// head into st: each live member's Drained and InRecord, the marks of
// names not live, and the head's generation and zxids. It returns the
// head, if there is one and it can be read.
func readDrainsAndRecord(c *client, st *groupStatus, live map[string]bool) (head assignment.Head, ok bool, err error) {
	marks, err := readMarks(c)
	if err != nil {
		return assignment.Head{}, false, err
	}
	for i := range st.Members {
		_, st.Members[i].Drained = marks[st.Members[i].Name]
	}
	for _, name := range slices.Sorted(maps.Keys(marks)) {
		if !live[name] {
			st.DrainedAbsent = append(st.DrainedAbsent, marks[name])
		}
	}
	head, ok, err = readHead(c)
	switch {
	case errors.Is(err, assignment.ErrInvalid):
		st.Record = &recordStatus{Error: err.Error()}
		return assignment.Head{}, false, nil
	case err != nil:
		return assignment.Head{}, false, err
	case ok:
		st.Record = &recordStatus{Generation: head.Generation, MembersZxid: zxidHex(head.MembersZxid), PartitionsZxid: zxidHex(head.PartitionsZxid)}
		for i := range st.Members {
			if e, ok := head.Of(st.Members[i].Name); ok {
				st.Members[i].InRecord = &e.Count
			}
		}
	}
	return head, ok, nil
}

// zxidHex writes a zxid as ZooKeeper's tools show it.
func zxidHex(zxid int64) string { return fmt.Sprintf("0x%x", zxid) }

// drain sets the drain marks of names, all in one multi, after checking
// all of them: the group exists, each name is a member the group knows
// (live, seated, in the record's head, or drained already), the live
// members run the sticky strategy, and a live member not drained is
// left. Names already drained are said on stderr and are no error.
func drain(c *client, names []string, stdout, stderr io.Writer) error {
	if err := c.checkGroup(); err != nil {
		return err
	}
	marks, err := readMarks(c)
	if err != nil {
		return err
	}
	live, err := liveMembers(c.conn, c.paths)
	if err != nil {
		return err
	}
	seats, err := children(c.conn, c.paths.Seats())
	if err != nil {
		return err
	}
	head, hasHead, err := readHead(c)
	if err != nil {
		if !errors.Is(err, assignment.ErrInvalid) {
			return err
		}
		fmt.Fprintf(stderr, "zkalloc: %v; ignored\n", err)
	}
	isLive := func(name string) bool {
		return slices.ContainsFunc(live, func(m liveMember) bool { return m.name == name })
	}

	var todo, unknown []string
	for _, n := range names {
		_, inHead := head.Of(n)
		_, drained := marks[n]
		switch {
		case drained:
		case isLive(n), slices.Contains(seats, n), inHead:
			todo = append(todo, n)
		default:
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return unknownMembers(c, unknown, live, hasHead)
	}
	for _, n := range names {
		if m, ok := marks[n]; ok && !slices.Contains(todo, n) {
			fmt.Fprintf(stderr, "zkalloc: %s is already drained%s; nothing to do\n", n, m.since())
		}
	}
	if len(todo) == 0 {
		return nil
	}
	for _, m := range live {
		if m.info.Strategy != "" && m.info.Strategy != stickyStrategy {
			return fmt.Errorf("drain needs the sticky strategy; member %s runs %s (nothing drained)", m.name, m.info.Strategy)
		}
	}
	undrained := func(extra []string) int {
		n := 0
		for _, m := range live {
			if _, ok := marks[m.name]; !ok && !slices.Contains(extra, m.name) {
				n++
			}
		}
		return n
	}
	if undrained(nil) > 0 && undrained(todo) == 0 {
		return fmt.Errorf("draining %s would leave no live member undrained: the partitions would have nobody to go to (nothing drained); undrain another member first (zkalloc undrain MEMBER), or start one", strings.Join(todo, ", "))
	}

	acl, _, err := c.conn.GetACL(c.paths.Dir())
	if err != nil {
		return fmt.Errorf("the group's ACL: %w", err)
	}
	var ops []any
	if ok, _, err := c.conn.Exists(c.paths.Drained()); err != nil {
		return err
	} else if !ok {
		ops = append(ops, &zk.CreateRequest{Path: c.paths.Drained(), Acl: acl})
	}
	data := markData(time.Now())
	for _, n := range todo {
		ops = append(ops, &zk.CreateRequest{Path: c.paths.DrainedMember(n), Data: data, Acl: acl})
	}
	if err := multi(c.conn, ops); err != nil {
		return fmt.Errorf("drain %s: nothing drained: %w", strings.Join(todo, ", "), err)
	}
	for _, n := range todo {
		what := "its partitions, if it has any, move to the others with the usual hand-off"
		if e, ok := head.Of(n); ok {
			what = fmt.Sprintf("its %d partitions move to the others with the usual hand-off", e.Count)
			if e.Count == 0 {
				what = "it owns no partitions in the assignment record"
			}
		}
		if _, err := fmt.Fprintf(stdout, "drained %s (%s)\n", n, what); err != nil {
			return err
		}
	}
	return nil
}

// unknownMembers is drain's error for names the group does not know.
func unknownMembers(c *client, unknown []string, live []liveMember, hasHead bool) error {
	where := "not a live member, not a seat, not drained"
	if hasHead {
		where = "not a live member, not a seat, not in the assignment record, not drained"
	}
	var names []string
	for _, m := range live {
		names = append(names, m.name)
	}
	have := "no live members"
	switch {
	case len(names) > maxNamed:
		have = fmt.Sprintf("live members: %s, and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
	case len(names) > 0:
		have = "live members: " + strings.Join(names, ", ")
	}
	what := "member " + unknown[0]
	if len(unknown) > 1 {
		what = "members " + strings.Join(unknown, ", ")
	}
	return fmt.Errorf("unknown %s in group %s: %s (%s); nothing drained", what, c.paths.Group, where, have)
}

// undrain deletes the drain marks of names, all in one multi. Names not
// drained are said on stderr and are no error.
func undrain(c *client, names []string, stdout, stderr io.Writer) error {
	if err := c.checkGroup(); err != nil {
		return err
	}
	marks, err := readMarks(c)
	if err != nil {
		return err
	}
	var todo []string
	var ops []any
	for _, n := range names {
		if _, ok := marks[n]; !ok {
			fmt.Fprintf(stderr, "zkalloc: %s is not drained; nothing to do\n", n)
			continue
		}
		todo = append(todo, n)
		ops = append(ops, &zk.DeleteRequest{Path: c.paths.DrainedMember(n), Version: -1})
	}
	if len(ops) == 0 {
		return nil
	}
	if err := multi(c.conn, ops); err != nil {
		return fmt.Errorf("undrain %s: nothing undrained: %w", strings.Join(todo, ", "), err)
	}
	for _, n := range todo {
		if _, err := fmt.Fprintf(stdout, "undrained %s (it takes a share again, moved to it with the usual hand-off)\n", n); err != nil {
			return err
		}
	}
	return nil
}

// markNames are the names of the drain marks st shows, live members'
// and others'.
func markNames(st *groupStatus) []string {
	var names []string
	for _, m := range st.Members {
		if m.Drained {
			names = append(names, m.Name)
		}
	}
	for _, d := range st.DrainedAbsent {
		names = append(names, d.Name)
	}
	return names
}
