package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/rebalance"
)

// datedChange finds when the group's members or set last changed, which
// is how old its hand-offs are: a hand-off in progress is one the group
// has not settled since. ZooKeeper dates a node's creation (ctime) and
// its last write (mtime), not a deletion: a member that joined, a seat
// kept (DepartureDelay) and a topic node's IDs are dated; a member that
// left is seen only as a child change of members/ (its pzxid), newer than
// every member node. Such a departure is dated by the first claim taken
// after it, since the departed member's partitions are taken at once; if
// no claim was taken since, the change, and so the age, is unknown.
//
// ZooKeeper stamps the times with the server's clock, and status
// subtracts them from its own: the ages are off by the clocks' skew.
type datedChange struct {
	zxid int64 // of the newest dated change
	ms   int64 // its time, in ms since the epoch

	claimZxid, claimMs []int64 // each claim's creation
	undated            int64   // the newest child change of members/ or seats/ (or drained/)
}

// saw notes a dated change.
func (d *datedChange) saw(zxid, ms int64) {
	if zxid > d.zxid {
		d.zxid, d.ms = zxid, ms
	}
}

// claimed notes a claim's creation.
func (d *datedChange) claimed(zxid, ms int64) {
	d.claimZxid = append(d.claimZxid, zxid)
	d.claimMs = append(d.claimMs, ms)
}

// read reads the other dates: the seats, the topic nodes, and the child
// changes of members/ and seats/; with drains (the sticky strategy,
// whose members move partitions on a drain or an undrain), the drain
// marks named and the child changes of drained/ too.
func (d *datedChange) read(c *client, seats []string, drains bool, marks []string) error {
	topics, err := children(c.conn, c.paths.Partitions())
	if err != nil {
		return err
	}
	const (
		parent = iota // its child changes: undated
		created
		written
	)
	var paths []string
	var kinds []int
	add := func(kind int, ps ...string) {
		paths = append(paths, ps...)
		for range ps {
			kinds = append(kinds, kind)
		}
	}
	add(parent, c.paths.Members(), c.paths.Seats())
	for _, s := range seats {
		add(created, c.paths.Seat(s))
	}
	if drains {
		add(parent, c.paths.Drained())
		for _, m := range marks {
			add(created, c.paths.DrainedMember(m))
		}
	}
	for _, t := range topics {
		add(written, c.paths.Topic(t))
	}
	stats := make([]*zk.Stat, len(paths))
	errs := make([]error, len(paths))
	inflight.Do(len(paths), func(i int) {
		_, stats[i], errs[i] = c.conn.Exists(paths[i])
	})
	for i, st := range stats {
		switch {
		case errs[i] != nil && !errors.Is(errs[i], zk.ErrNoNode):
			return errs[i]
		case st == nil || st.Czxid == 0: // gone since listed
		case kinds[i] == parent:
			d.undated = max(d.undated, st.Pzxid)
		case kinds[i] == created:
			d.saw(st.Czxid, st.Ctime)
		default: // a topic: its IDs last written, or its creation
			d.saw(st.Mzxid, st.Mtime)
		}
	}
	return nil
}

// when returns when the members or the set last changed, or the zero
// time if that is unknown.
func (d *datedChange) when() time.Time {
	if d.undated <= d.zxid {
		if d.zxid == 0 {
			return time.Time{}
		}
		return time.UnixMilli(d.ms)
	}
	// A departure is newer than every dated change: date it by the first
	// claim taken after it.
	first := int64(-1)
	for i, z := range d.claimZxid {
		if z > d.undated && (first < 0 || z < d.claimZxid[first]) {
			first = int64(i)
		}
	}
	if first < 0 {
		return time.Time{}
	}
	return time.UnixMilli(d.claimMs[first])
}

// check prints the problems status -check looks for, one a line, and
// returns errProblems if there is one: partitions nobody owns that no
// hand-off explains, and hand-offs older than -max-handoff-age.
func check(st *groupStatus, o options, w io.Writer) error {
	maxAge := o.maxHandoffAge
	now := time.Now()
	var problems []string
	explained := map[string]bool{}
	for _, p := range st.Paused {
		explained[p] = true
	}
	for _, h := range st.Handoffs {
		explained[h.Partition] = true
	}
	var unexplained []rebalance.Partition
	for _, name := range st.Unowned {
		if !explained[name] {
			if p, err := rebalance.Parse(name); err == nil {
				unexplained = append(unexplained, p)
			}
		}
	}
	if len(unexplained) > 0 {
		why := "no hand-off can be told"
		switch {
		case len(st.Members) == 0:
			why = "no member runs"
		case st.HandoffsUnknown != "":
			why = "no hand-off can be told: " + st.HandoffsUnknown
		}
		for _, topic := range compactByTopic(unexplained) {
			problems = append(problems, fmt.Sprintf("unowned %s: %s", topic, why))
		}
	}
	if !st.changed.IsZero() {
		age := max(now.Sub(st.changed), 0)
		for _, h := range st.Handoffs {
			if age <= maxAge {
				break
			}
			from := h.from("nobody")
			problems = append(problems, fmt.Sprintf("hand-off %s from %s to %s: %v old, more than %v", h.Partition, from, h.To, age.Round(time.Second), maxAge))
		}
	}
	st.Problems = problems
	if o.json {
		if err := encodeJSON(w, st, true); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		if len(problems) == 0 {
			fmt.Fprintf(w, "ok: group %s: %d members; every partition owned, paused for a seat or in a hand-off younger than %v\n", st.Group, len(st.Members), maxAge)
		}
	}
	if len(problems) > 0 {
		return errProblems
	}
	return nil
}

// compactByTopic renders partitions one topic at a time: "events:0-3,7".
func compactByTopic(ps []rebalance.Partition) []string {
	rebalance.Sort(ps)
	var out []string
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j].Topic == ps[i].Topic {
			j++
		}
		out = append(out, compact(slices.Clone(ps[i:j])))
		i = j
	}
	return out
}
