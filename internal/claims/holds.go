package claims

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Hold records: a claim is an ephemeral node, and anyone may delete it. If
// the next owner of a partition took it as soon as the claim was gone, an
// operator's delete during a hand-off would give the partition two owners
// (issue 24): the holder learns of the delete only at its next check, up
// to a session timeout later. So beside each claim stands its hold record,
// the persistent node <group>/holds/<topic>:<id>, whose data names the
// session (and member) that holds the claim:
//
//   - A take is one multi-operation: create the claim, create the record
//     (and the closing SetData that yields the token, see takeOps). It
//     fails if either exists.
//   - A release is one multi-operation: delete the claim and the record.
//   - A take that finds the claim free but a record standing reads the
//     record. One of this session means the claim vanished ([decision.Held.Vanished]);
//     one of an earlier session of this actor is replaced. Otherwise the
//     holder's member node tells whether its session lives: ZooKeeper
//     deletes every ephemeral node of a session in one transaction when it
//     expires or is closed, and a member registers again only in a new
//     session. If members/<member> exists and its ephemeral owner is the
//     record's session, the holder lives: the taker waits, with a watch on
//     the record (its release) and one on the member node (its session's
//     end). If not, the holder's session has ended, and the taker replaces
//     the record in the multi-operation that creates the claim, deleting it
//     at the version it read.
//
// A partition so moves only on a release by its holder or on the end of
// the holder's session, whoever deletes its claim. What can still break it
// is an outsider deleting a hold record together with its claim, or a
// member node together with the claims of its member, while members run;
// docs/claims.md says what an operator may delete. And one narrow race:
// the version a replaced record is deleted at cannot tell it from one
// deleted and created again meanwhile (records are never written, so
// always at version 0). That takes another member replacing the record
// itself and an outsider deleting that member's new claim, both between
// the read and the replace, one round trip.
//
// Members of an older version write no records and ignore them: a member
// of this version waits for their claims as before (on the claim's watch),
// and replaces a record they left standing (of a session that has ended)
// by the rule above. Until every member runs this version, an older one
// may still take a partition whose claim an outsider deleted.
//
// A record that cannot be read as one (anything another program wrote)
// proves nothing: the taker waits for it to change, and logs it once.

// holdData is the data of a hold record naming session sid of member.
func holdData(sid int64, member string) []byte {
	return []byte("0x" + strconv.FormatUint(uint64(sid), 16) + " " + member)
}

// maxHoldData bounds a hold record's data: "0x", 16 hex digits, a space
// and a member name.
const maxHoldData = 2 + 16 + 1 + rebalance.MaxNameLen

// parseHold reads a hold record's data. It accepts only what holdData
// writes, with a valid member name; ok is false for anything else.
func parseHold(data []byte) (sid int64, member string, ok bool) {
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

func (c *Actor) record(p rebalance.Partition) string { return c.cfg.Paths.Holds() + "/" + p.String() }

// holdFound is what [Actor.lookRecord] found of a partition's hold record.
type holdFound int

const (
	holdNone    holdFound = iota // no record
	holdMine                     // a record of session sid
	holdBefore                   // a record of an earlier session of this actor
	holdDead                     // a record of another session, which has ended
	holdLive                     // a record of another session, alive
	holdForeign                  // data that is not a hold record
)

// holdLook is what one read of a hold record found.
type holdLook struct {
	found   holdFound
	version int32
	session int64           // the record's session; 0 for holdNone and holdForeign
	member  string          // the record's member
	watch   <-chan zk.Event // the record's watch (holdLive, holdForeign)
	life    *life           // for holdLive: the holder's liveness, with its member node's watch
	err     error
}

// lives caches, within one attempt, whether the sessions named by hold
// records live, so that taking over a crashed member's many partitions
// costs one read of its member node, not one per partition. Safe for the
// concurrent looks of one attempt.
type lives struct {
	log *slog.Logger
	mu  sync.Mutex
	by  map[int64]*life
}

// life is one session's liveness, read once.
type life struct {
	once   sync.Once
	member string
	alive  bool
	watch  <-chan zk.Event // the member node's watch, if alive: fires when the session ends
	err    error
}

func newLives(log *slog.Logger) *lives { return &lives{log: log, by: make(map[int64]*life)} }

// of returns whether session sid of member lives, reading its member node
// with a watch the first time it is asked in the attempt.
func (ls *lives) of(conn zksession.Conn, paths zkpath.Group, sid int64, member string) *life {
	ls.mu.Lock()
	l, ok := ls.by[sid]
	if !ok {
		l = &life{member: member}
		ls.by[sid] = l
	}
	ls.mu.Unlock()
	l.once.Do(func() {
		exists, stat, w, err := conn.ExistsW(paths.Member(member))
		switch {
		case err != nil:
			l.err = fmt.Errorf("read member node of %q: %w", member, err)
		case exists && stat.EphemeralOwner == sid:
			l.alive, l.watch = true, w
		default:
			ls.log.Info("zkalloc: the session named by hold records here has ended (its member node is gone or another session's); their partitions are taken over as they are wanted",
				"holder", member, "holder_session", fmt.Sprintf("%#x", sid))
		}
		// Absent, or another session's (the member registered again in a
		// new session): sid has ended. Its watch, if any, is left to fire
		// into its buffered channel unread.
	})
	return l
}

// lookRecord reads p's hold record, with a watch if watch is set, and says
// what it names. The record's session is looked up in ls.
func (c *Actor) lookRecord(conn zksession.Conn, p rebalance.Partition, sid int64, ls *lives, watch bool) holdLook {
	var data []byte
	var stat *zk.Stat
	var w <-chan zk.Event
	var err error
	if watch {
		data, stat, w, err = conn.GetW(c.record(p))
	} else {
		data, stat, err = conn.Get(c.record(p))
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return holdLook{found: holdNone}
	case err != nil:
		return holdLook{err: fmt.Errorf("read hold record %s: %w", p, err)}
	}
	owner, member, ok := parseHold(data)
	switch {
	case !ok:
		c.logForeign(p, data)
		return holdLook{found: holdForeign, version: stat.Version, watch: w}
	case owner == sid:
		return holdLook{found: holdMine, version: stat.Version, session: owner, member: member}
	case c.ownedBefore(owner):
		return holdLook{found: holdBefore, version: stat.Version, session: owner, member: member}
	}
	l := ls.of(conn, c.cfg.Paths, owner, member)
	switch {
	case l.err != nil:
		return holdLook{err: l.err}
	case l.alive:
		return holdLook{found: holdLive, version: stat.Version, session: owner, member: member, watch: w, life: l}
	}
	return holdLook{found: holdDead, version: stat.Version, session: owner, member: member}
}

// logForeign logs, once per partition, a hold record that is not one.
func (c *Actor) logForeign(p rebalance.Partition, data []byte) {
	c.foreignMu.Lock()
	defer c.foreignMu.Unlock()
	if c.foreign[p] {
		return
	}
	c.foreign[p] = true
	if len(data) > 64 {
		data = append(data[:64:64], "..."...)
	}
	c.cfg.Logger.Warn("zkalloc: hold record is not one zkalloc wrote; waiting for it to change, since it proves no holder dead (delete it only while every member of the group is stopped)",
		"path", c.record(p), "data", fmt.Sprintf("%q", data))
}

// hold is what [Actor.readHold] found of a hold record.
type hold struct {
	present bool
	mine    bool // it names session sid (or, if asked, an earlier session of this actor)
	version int32
}

// readHold reads p's hold record and reports whether it names session
// sid (or, with before, an earlier session of this actor), and its
// version.
func (c *Actor) readHold(conn zksession.Conn, p rebalance.Partition, sid int64, before bool) (hold, error) {
	data, stat, err := conn.Get(c.record(p))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return hold{}, nil
	case err != nil:
		return hold{}, fmt.Errorf("read hold record %s: %w", p, err)
	}
	owner, _, ok := parseHold(data)
	return hold{present: true, mine: ok && (owner == sid || before && c.ownedBefore(owner)), version: stat.Version}, nil
}

// releaseHold deletes p's hold record if it names session sid or an
// earlier session of this actor: the claim is gone or another's, and the
// partition is given up. The record may have been read at version; if it
// has changed since, it is read again.
func (c *Actor) releaseHold(conn zksession.Conn, p rebalance.Partition, sid int64, version int32, read bool) error {
	for attempt := 0; attempt < 5; attempt++ {
		if !read {
			h, err := c.readHold(conn, p, sid, true)
			if err != nil || !h.mine {
				return err
			}
			version = h.version
		}
		err := conn.Delete(c.record(p), version)
		switch {
		case err == nil:
			c.cfg.Logger.Debug("zkalloc: released hold record", "partition", p.String())
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case !errors.Is(err, zk.ErrBadVersion):
			return fmt.Errorf("release hold record %s: %w", p, err)
		}
		read = false
	}
	return fmt.Errorf("release hold record %s: node keeps changing", p)
}

// releaseVanished releases the hold records of ps, vanished claims no
// longer wanted, at the versions read.
func (c *Actor) releaseVanished(conn zksession.Conn, ps []rebalance.Partition, sid int64) []outcome {
	versions := make([]int32, len(ps))
	for i, p := range ps {
		versions[i] = c.vanished[p]
	}
	results := make([]outcome, len(ps))
	inflight.Do(len(ps), func(i int) {
		if err := c.releaseHold(conn, ps[i], sid, versions[i], true); err != nil {
			results[i] = outcome{err: err}
			return
		}
		results[i] = outcome{state: stateNotHeld}
	})
	return results
}
