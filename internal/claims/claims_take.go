package claims

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A take creates a claim and its hold record in one multi-operation, and
// replaces, in the same, a hold record whose session has ended (see
// holds.go). When it fails, a look finds out what holds the partition.

// acquire tries to take p: to create its claim and hold record, replacing
// a record left by a session that has ended. If another session holds
// either, it arms a watch and reports p waiting.
func (c *Actor) acquire(conn zksession.Conn, p rebalance.Partition, sid int64, ls *lives) outcome {
	t := take{p: p, replace: noRecord}
	for attempt := 0; attempt < 5; attempt++ {
		ops, opOf := c.takeOps([]take{t}, sid)
		res, err := conn.Multi(ops...)
		switch {
		case err == nil && conn.SessionID() != sid:
			return outcome{err: errSessionMoved(sid, "claim "+p.String()), unsure: true}
		case err == nil:
			if t.replace != noRecord {
				c.cfg.Logger.Debug("zkalloc: claimed, replacing a hold record of an ended session", "partition", p.String())
			} else {
				c.cfg.Logger.Debug("zkalloc: claimed", "partition", p.String())
			}
			return outcome{state: stateHeld, token: tokenOf(res)}
		}
		k := failedOp(res, len(ops))
		if k < 0 {
			// The outcome is unknown: a retry reads the node, a release
			// deletes it if it is ours.
			return outcome{err: fmt.Errorf("claim %s: %w", p, err), unsure: true}
		}
		failed := res[k].Error
		var l looked
		switch op := opOf[k]; {
		case errors.Is(failed, zk.ErrNoNode) && op.kind != opDeleteRecord:
			if err := c.ensureParents(conn); err != nil {
				return outcome{err: err}
			}
			continue
		case op.kind == opDeleteRecord && (errors.Is(failed, zk.ErrNoNode) || errors.Is(failed, zk.ErrBadVersion)):
			l = c.look(conn, p, sid, ls) // the record changed since it was read
		case !errors.Is(failed, zk.ErrNodeExists):
			return outcome{err: fmt.Errorf("claim %s: %w", p, failed)}
		case op.kind == opCreateClaim:
			l = c.lookClaim(conn, p, sid)
		default:
			l = c.look(conn, p, sid, ls)
		}
		t.replace = noRecord
		switch l.found {
		case foundFinal:
			return l.r
		case foundStale:
			c.cfg.Logger.Info("zkalloc: replacing claim left by an earlier session of this member", "partition", p.String(), "earlier_session", fmt.Sprintf("%#x", l.owner))
			if err := c.deleteCounted(conn, c.path(p), l.claimVersion); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
				return outcome{err: fmt.Errorf("delete stale claim %s: %w", p, err)}
			}
		case foundReplace:
			t.replace = l.record
		}
	}
	return outcome{err: fmt.Errorf("claim %s: node keeps changing", p)}
}

// ensureParents creates the parents of the claims and of the hold records,
// for a group's first claims.
func (c *Actor) ensureParents(conn zksession.Conn) error {
	for _, dir := range []string{c.cfg.Paths.Owners(), c.cfg.Paths.Holds()} {
		if err := zkpath.Ensure(conn, dir, c.cfg.ACL...); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	return nil
}

// take is one partition to take: its claim and hold record to create,
// after deleting, at version replace, a hold record of a session that
// has ended, or of an earlier session of this actor (noRecord: none).
type take struct {
	p       rebalance.Partition
	replace int32
}

// noRecord is take.replace when there is no hold record to delete. It
// is never sent: to ZooKeeper, -1 means any version.
const noRecord int32 = -1

// opKind is what one operation of a take's multi-operation does.
type opKind int

const (
	opCreateClaim opKind = iota
	opCreateRecord
	opDeleteRecord
	opSetData
)

// opRef says what an operation of takeOps does, for which take.
type opRef struct {
	kind opKind
	i    int // the index of the take
}

// takeOps returns the operations of one transaction that takes the
// partitions of ts in session sid, and what each operation does.
//
// The claim's creation zxid is its fencing token, but go-zookeeper's
// Multi decodes no Stat for a create. So a SetData of the first claim, to
// the data it was just created with, closes the transaction: its Stat
// carries that claim's Czxid (see tokenOf), which every node the
// transaction creates shares, a transaction having one zxid. It costs no
// request and no round trip, where reading the claims back would cost one
// each (or one per batch, and a race with whoever deletes them
// meanwhile). The claim's version becomes 1; nothing reads it but the
// release, which deletes at the version it read.
func (c *Actor) takeOps(ts []take, sid int64) ([]any, []opRef) {
	data, hold := []byte(c.cfg.Member), holdData(sid, c.cfg.Member)
	ops := make([]any, 0, 3*len(ts)+1)
	refs := make([]opRef, 0, cap(ops))
	for i, t := range ts {
		if t.replace != noRecord {
			ops = append(ops, &zk.DeleteRequest{Path: c.record(t.p), Version: t.replace})
			refs = append(refs, opRef{opDeleteRecord, i})
		}
		ops = append(ops,
			&zk.CreateRequest{Path: c.path(t.p), Data: data, Acl: c.cfg.ACL, Flags: zk.FlagEphemeral},
			&zk.CreateRequest{Path: c.record(t.p), Data: hold, Acl: c.cfg.ACL})
		refs = append(refs, opRef{opCreateClaim, i}, opRef{opCreateRecord, i})
	}
	ops = append(ops, &zk.SetDataRequest{Path: c.path(ts[0].p), Data: data, Version: 0})
	return ops, append(refs, opRef{opSetData, 0})
}

// takeBytes is about how many bytes of request taking t adds: each
// operation's path, data and headers (with the ACL).
func (c *Actor) takeBytes(t take) int {
	claim, record := len(c.path(t.p))+64, len(c.record(t.p))+64
	n := claim + len(c.cfg.Member) + record + maxHoldData
	if t.replace != noRecord {
		n += record
	}
	return n
}

// failedOp returns the index of the operation that failed a
// multi-operation of n operations, from its results, or -1 if they do
// not tell (no answer). ZooKeeper answers each operation of a failed
// multi-operation: those before the one that failed with no error, that
// one with its error, those after it with a runtime inconsistency.
func failedOp(res []zk.MultiResponse, n int) int {
	if len(res) != n {
		return -1
	}
	for k, r := range res {
		if r.Error != nil {
			return k
		}
	}
	return -1
}

// tokenOf returns the creation zxid of the claims a transaction of
// takeOps created, from the response of its last operation.
func tokenOf(res []zk.MultiResponse) int64 {
	if len(res) == 0 || res[len(res)-1].Stat == nil {
		return 0
	}
	return res[len(res)-1].Stat.Czxid
}

// looked is what [Actor.look] or [Actor.lookClaim] found.
type looked struct {
	r            outcome // for foundFinal
	found        claimFound
	owner        int64 // for foundStale: the claim's owner
	claimVersion int32 // for foundStale: the claim's version
	record       int32 // for foundReplace: the hold record's version
}

// claimFound is what a look found.
type claimFound int

const (
	foundFinal   claimFound = iota + 1 // its outcome is final
	foundFree                          // no claim, no hold record: take it
	foundStale                         // a claim of an earlier session of ours: delete it, then take
	foundReplace                       // no claim (or not looked at), and a hold record of a session that has ended: take it, replacing the record
)

// look finds out, with a watch, what holds p, when taking it failed
// (alone or in a batch). It reads p's hold record first (see holds.go):
// a live holder's is waited on, with a watch on the record and on the
// holder's member node; that of an ended session is to be replaced, and
// p taken over. Without a record, or with one of this actor's, it looks
// at the claim (see lookClaim); one of this session without the claim
// is a claim that vanished.
func (c *Actor) look(conn zksession.Conn, p rebalance.Partition, sid int64, ls *lives) looked {
	return c.lookWatching(conn, p, sid, ls, true)
}

// lookExpectingEnded is look for a partition whose holder's session has
// most likely ended, as those of a crashed member: it reads the hold
// record without a watch, which would only fire when the take-over
// deletes the record (a notification per partition), and reads it again
// with one if the holder turns out alive after all.
func (c *Actor) lookExpectingEnded(conn zksession.Conn, p rebalance.Partition, sid int64, ls *lives) looked {
	return c.lookWatching(conn, p, sid, ls, false)
}

func (c *Actor) lookWatching(conn zksession.Conn, p rebalance.Partition, sid int64, ls *lives, watch bool) looked {
	h := c.lookRecord(conn, p, sid, ls, watch)
	if !watch && (h.found == holdLive || h.found == holdForeign) {
		h = c.lookRecord(conn, p, sid, ls, true) // to wait on it
	}
	if h.err != nil {
		return looked{found: foundFinal, r: outcome{err: h.err}}
	}
	switch h.found {
	case holdLive:
		c.cfg.Logger.Debug("zkalloc: waiting for hold record", "partition", p.String(), "holder", h.member, "holder_session", fmt.Sprintf("%#x", h.session))
		return looked{found: foundFinal, r: outcome{state: stateWaiting, watch: h.watch, holder: h.session, life: h.life}}
	case holdForeign:
		return looked{found: foundFinal, r: outcome{state: stateWaiting, watch: h.watch}}
	case holdDead:
		return looked{found: foundReplace, record: h.version}
	case holdNone:
		return c.lookClaim(conn, p, sid)
	}
	l := c.lookClaim(conn, p, sid)
	switch {
	case h.found == holdBefore && l.found == foundFree:
		return looked{found: foundReplace, record: h.version}
	case h.found == holdBefore, l.r.err != nil, l.found == foundFinal && l.r.state == stateHeld:
		return l // an earlier session's claim, or a create of ours whose outcome was unknown went through
	}
	c.cfg.Logger.Warn("zkalloc: claim of this session was deleted from outside; its hold record keeps the partition from other members, and it is revoked until released",
		"partition", p.String())
	return looked{found: foundFinal, r: outcome{state: stateVanished, version: h.version}}
}

// lookClaim reads p's claim with a watch, and says what it found: a claim
// held by another session (the outcome: waiting for the watch), by this
// one (held: an earlier create went through), by an earlier one of ours
// (foundStale, to delete and create again), or no claim (foundFree,
// released meanwhile; the watch then fires for our own create and is
// dropped).
func (c *Actor) lookClaim(conn zksession.Conn, p rebalance.Partition, sid int64) looked {
	exists, stat, watch, err := conn.ExistsW(c.path(p))
	switch {
	case err != nil:
		return looked{found: foundFinal, r: outcome{err: fmt.Errorf("watch claim %s: %w", p, err)}}
	case !exists:
		return looked{found: foundFree}
	case stat.EphemeralOwner == sid:
		return looked{found: foundFinal, r: outcome{state: stateHeld, token: stat.Czxid}}
	case c.ownedBefore(stat.EphemeralOwner):
		return looked{found: foundStale, owner: stat.EphemeralOwner, claimVersion: stat.Version}
	}
	if c.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) { // holderName reads
		c.cfg.Logger.Debug("zkalloc: waiting for claim", "partition", p.String(),
			"holder", c.holderName(conn, p, stat.EphemeralOwner), "holder_session", fmt.Sprintf("%#x", stat.EphemeralOwner))
	}
	return looked{found: foundFinal, r: outcome{state: stateWaiting, watch: watch, holder: stat.EphemeralOwner}}
}
