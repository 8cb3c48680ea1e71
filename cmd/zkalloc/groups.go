package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/membership"
)

// groupSummary is one line of groups list.
type groupSummary struct {
	Group      string `json:"group"`
	Members    int    `json:"members"`    // live
	Partitions int    `json:"partitions"` // in the set, as members read it
}

func listGroups(c *client, o options, w io.Writer) error {
	names, err := children(c.conn, c.paths.Root+"/groups")
	if err != nil {
		return err
	}
	out := make([]groupSummary, len(names))
	errs := make([]error, len(names))
	for i, name := range names {
		g := zkpath.Group{Root: c.paths.Root, Group: name}
		out[i].Group = name
		members, err := liveMembers(c.conn, g)
		if err != nil {
			errs[i] = err
			continue
		}
		out[i].Members = len(members)
		set, _, err := partset.Read(c.conn, g)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs[i] = err
			continue
		}
		for _, ids := range set {
			out[i].Partitions += len(ids)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.json {
		return encodeJSON(w, out, false)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintf(w, "no groups under %s\n", c.paths.Root)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tMEMBERS\tPARTITIONS")
	for _, g := range out {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", g.Group, g.Members, g.Partitions)
	}
	return tw.Flush()
}

// liveMember is a member node of a live session.
type liveMember struct {
	name    string
	session int64
	info    membership.Info // zero if the node's data is not an Info
	stat    *zk.Stat        // the member node's
}

// nodeRead is one Get's reply, for reads made in flight together.
type nodeRead struct {
	data []byte
	stat *zk.Stat
	err  error
}

// liveMembers returns the group's live members, in name order: the
// nodes under members/ that are ephemerals of a live session, as the
// members themselves judge (membership.IsMember).
func liveMembers(conn *zk.Conn, g zkpath.Group) ([]liveMember, error) {
	names, err := children(conn, g.Members())
	if err != nil {
		return nil, err
	}
	reads := make([]nodeRead, len(names))
	inflight.Do(len(names), func(i int) {
		reads[i].data, reads[i].stat, reads[i].err = conn.Get(g.Member(names[i]))
	})
	var out []liveMember
	for i, r := range reads {
		switch {
		case errors.Is(r.err, zk.ErrNoNode): // left since listed
		case r.err != nil:
			return nil, r.err
		case membership.IsMember(r.stat.EphemeralOwner):
			info, _ := membership.ParseInfo(r.data)
			out = append(out, liveMember{name: names[i], session: r.stat.EphemeralOwner, info: info, stat: r.stat})
		}
	}
	return out, nil
}

// maxMultiBytes bounds the paths of one multi that deletes: ZooKeeper
// refuses a request larger than its jute.maxbuffer, 1 MiB by default.
const maxMultiBytes = 256 << 10

// deleteGroup deletes the group's node and everything under it. It
// refuses a group with live members or claims. The nodes go in one
// transaction when their paths fit in one (maxMultiBytes): a member that
// joins meanwhile then fails it whole, and nothing is deleted. A larger
// group goes in several, the members' node first: a member that starts
// meanwhile makes the last one fail, and the command says so.
func deleteGroup(c *client, w io.Writer) error {
	if err := c.checkGroup(); err != nil {
		return err
	}
	g := c.paths
	members, err := liveMembers(c.conn, g)
	if err != nil {
		return err
	}
	if len(members) > 0 {
		var names []string
		for _, m := range members {
			d := fmt.Sprintf("session %s", sessionHex(m.session))
			if m.info.Host != "" {
				d = fmt.Sprintf("host %s, pid %d, %s", m.info.Host, m.info.PID, d)
			}
			names = append(names, fmt.Sprintf("%s (%s)", m.name, d))
		}
		return fmt.Errorf("group %q has %d live members: %s; stop them first", g.Group, len(members), strings.Join(names, ", "))
	}
	claims, err := children(c.conn, g.Owners())
	if err != nil {
		return err
	}
	if len(claims) > 0 {
		return fmt.Errorf("group %q has %d claims held (%s...): a member is still stopping; try again", g.Group, len(claims), claims[0])
	}
	// Every node under the group, the members' first, children before
	// their parents.
	var paths []string
	subtree := func(dir string) error {
		kids, _, err := c.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			paths = append(paths, dir+"/"+k)
		}
		paths = append(paths, dir)
		return nil
	}
	dirs := []string{g.Members(), g.Seats(), g.Partitions(), g.Owners(), g.Holds()}
	top, err := children(c.conn, g.Dir())
	if err != nil {
		return err
	}
	for _, k := range top { // anything else a tool put there
		if p := g.Dir() + "/" + k; !slices.Contains(dirs, p) {
			dirs = append(dirs, p)
		}
	}
	for _, dir := range dirs {
		if err := subtree(dir); err != nil {
			return err
		}
	}
	paths = append(paths, g.Dir())

	var batch []any
	size, deleted := 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := multi(c.conn, batch); err != nil {
			if deleted > 0 {
				return fmt.Errorf("delete group %q: %d of %d nodes deleted, then: %w (a member started meanwhile? run groups delete again)", g.Group, deleted, len(paths), err)
			}
			return fmt.Errorf("delete group %q: nothing deleted: %w (a member joined meanwhile?)", g.Group, err)
		}
		deleted += len(batch)
		batch, size = batch[:0], 0
		return nil
	}
	for _, p := range paths {
		if size+len(p) > maxMultiBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, &zk.DeleteRequest{Path: p, Version: -1})
		size += len(p) + 16
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "deleted group %s under %s, and the %d nodes under it\n", g.Group, g.Root, deleted-1)
	return err
}

// multi runs ops as one transaction and returns its error, with the
// failing operation's path.
func multi(conn *zk.Conn, ops []any) error {
	res, err := conn.Multi(ops...)
	for i, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && i < len(ops) {
			return fmt.Errorf("%s: %w", opPath(ops[i]), r.Error)
		}
	}
	return err
}

// opPath is the path of one operation of a multi.
func opPath(op any) string {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return op.Path
	case *zk.DeleteRequest:
		return op.Path
	case *zk.SetDataRequest:
		return op.Path
	case *zk.CheckVersionRequest:
		return op.Path
	}
	return fmt.Sprintf("%T", op)
}
