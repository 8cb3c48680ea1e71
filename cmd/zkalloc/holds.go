package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/rebalance"
)

// holdStatus is one hold record, holds/<topic>:<id>: the persistent node
// a member keeps beside each claim, naming the session and member that
// hold the partition. The holder creates and deletes it with its claim;
// another member takes the partition over only when the holder has
// released it or the record's session has ended.
type holdStatus struct {
	Partition string `json:"partition"`         // the record's name, "topic:id"
	Member    string `json:"member,omitempty"`  // the member it names
	Session   string `json:"session,omitempty"` // the session it names, hex as for members
	Data      string `json:"data,omitempty"`    // a record members cannot read (see parseHold): its data, cut at maxShownData bytes
}

// maxShownData bounds the data of an unreadable hold record that status
// shows.
const maxShownData = 100

// hold is a hold record as read, parsed.
type hold struct {
	holdStatus
	p       rebalance.Partition
	session int64
	ok      bool // the name is a partition and parseHold takes the data
}

// parseHold reads a hold record's data, "0x<session in hex> <member>",
// as the claims package writes it, and takes exactly what the members
// take (claims' own parseHold), so that status calls unreadable what they
// do; ok is false for anything else. It is the one place here that knows
// the format.
func parseHold(data []byte) (session int64, member string, ok bool) {
	if len(data) > maxHoldData {
		return 0, "", false
	}
	hex, member, found := strings.Cut(string(data), " ")
	if !found || len(hex) < 3 || len(hex) > 18 || hex[:2] != "0x" {
		return 0, "", false
	}
	u, err := strconv.ParseUint(hex[2:], 16, 64)
	if err != nil || u == 0 || rebalance.ValidateName(member) != nil || len(member) > rebalance.MaxNameLen {
		return 0, "", false
	}
	return int64(u), member, true
}

// maxHoldData bounds a hold record's data: "0x", 16 hex digits, a space
// and a member name.
const maxHoldData = 2 + 16 + 1 + rebalance.MaxNameLen

// sessionHex writes a session ID as status shows members' sessions.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// readHolds reads every hold record of the group, the reads pipelined.
// A group whose members keep no records (versions from before them) has
// no holds node: none.
func readHolds(c *client) ([]hold, error) {
	names, err := children(c.conn, c.paths.Holds())
	if err != nil {
		return nil, err
	}
	type read struct {
		data []byte
		err  error
	}
	reads := make([]read, len(names))
	inflight.Do(len(names), func(i int) {
		reads[i].data, _, reads[i].err = c.conn.Get(c.paths.Holds() + "/" + names[i])
	})
	out := make([]hold, 0, len(names))
	for i, name := range names {
		r := reads[i]
		if errors.Is(r.err, zk.ErrNoNode) {
			continue // released since listed
		}
		if r.err != nil {
			return nil, r.err
		}
		h := hold{holdStatus: holdStatus{Partition: name}}
		p, perr := rebalance.Parse(name)
		session, member, ok := parseHold(r.data)
		if perr == nil && ok {
			h.p, h.session, h.ok = p, session, true
			h.Member, h.Session = member, sessionHex(session)
		} else {
			h.Data = string(r.data[:min(len(r.data), maxShownData)])
		}
		out = append(out, h)
	}
	return out, nil
}

// judgeHolds sorts the hold records into those that need saying, each
// list in partition order: a record of a live session with no claim
// beside it, which keeps its partition from every other member
// (recordOnly); a record of a session that has ended, which the next
// owner replaces (ended); and one that names no session and member, or
// no partition (bad), which members wait on. A record's session lives,
// as members judge it, while the node of the member it names is an
// ephemeral of that session: sessions maps each member read to its
// node's session. A record of a live session beside a claim is the
// normal case and is not listed.
func judgeHolds(holds []hold, sessions map[string]int64, claimed func(rebalance.Partition) bool) (recordOnly, ended, bad []holdStatus) {
	slices.SortFunc(holds, func(a, b hold) int {
		switch {
		case a.ok && b.ok:
			return rebalance.Compare(a.p, b.p)
		case a.ok != b.ok:
			if a.ok {
				return -1 // the readable first
			}
			return 1
		}
		return strings.Compare(a.Partition, b.Partition)
	})
	for _, h := range holds {
		switch {
		case !h.ok:
			bad = append(bad, h.holdStatus)
		case sessions[h.Member] != h.session:
			ended = append(ended, h.holdStatus)
		case !claimed(h.p):
			recordOnly = append(recordOnly, h.holdStatus)
		}
	}
	return recordOnly, ended, bad
}

// deleteAdvice is what status says where it shows hand-offs or records
// without claims, and what its help says: deleting nodes by hand does not
// unstick a hand-off.
const deleteAdvice = `A hand-off that stays is a member that does not release: look at the member
in FROM (its log, its consumer's acks) and restart it if it is stuck.
Deleting its claim (owners/) does not help: the holder only revokes the
partition, and nobody else takes it until the holder releases its hold
record (holds/) or its session ends (members of versions that keep no hold
records let another take it at once: two owners). Never delete hold records
while members run: that can give a partition two owners. Seats (seats/) may
be deleted (docs/departure.md).`
