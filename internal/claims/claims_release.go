package claims

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A release deletes a claim and its hold record together, and only while
// the claim is this session's: it reads the claim first, or, releasing
// many, proves from the owners node that the claims are still ours (see
// claims_proof.go).

// release gives p up: it deletes p's claim and hold record, if the claim
// is still the current session's, in one multi-operation (see holds.go).
// A claim that is gone, or another's, leaves the hold record, which is
// deleted if it names this session.
func (c *Actor) release(conn zksession.Conn, p rebalance.Partition, sid int64) outcome {
	for attempt := 0; attempt < 5; attempt++ {
		r, version, ours := c.readToRelease(conn, p, sid)
		if !ours {
			return r
		}
		res, err := conn.Multi(releaseOps(c.path(p), c.record(p), version)...)
		switch {
		case err == nil:
			c.deleted(1)
			c.cfg.Logger.Debug("zkalloc: released", "partition", p.String())
			return outcome{state: stateNotHeld}
		case len(res) == 2 && res[0].Error == nil && errors.Is(res[1].Error, zk.ErrNoNode):
			// The hold record was deleted from outside: delete the claim.
			c.cfg.Logger.Warn("zkalloc: hold record of a claim held by this session is missing; it was deleted from outside (never delete hold records while members run)", "partition", p.String())
			err := c.deleteCounted(conn, c.path(p), version)
			switch {
			case err == nil || errors.Is(err, zk.ErrNoNode):
				return outcome{state: stateNotHeld}
			case !errors.Is(err, zk.ErrBadVersion):
				return outcome{err: fmt.Errorf("release claim %s: %w", p, err)}
			}
		case len(res) == 2 && (errors.Is(res[0].Error, zk.ErrNoNode) || errors.Is(res[0].Error, zk.ErrBadVersion)):
			// The claim changed since it was read: read it again.
		default:
			return outcome{err: fmt.Errorf("release claim %s: %w", p, err)}
		}
	}
	return outcome{err: fmt.Errorf("release claim %s: node keeps changing", p)}
}

// releaseOps deletes a claim at version and its hold record. The record
// is deleted whatever its version: while the claim is this session's, it
// can be no other's, since nobody replaces a record without creating the
// claim in the same multi-operation.
func releaseOps(claim, record string, version int32) []any {
	return []any{&zk.DeleteRequest{Path: claim, Version: version}, &zk.DeleteRequest{Path: record, Version: -1}}
}

// readToRelease reads p's claim and reports whether it is session sid's,
// to be deleted at the version returned; if not, the outcome is final,
// and this session's hold record, if one stands, has been released.
func (c *Actor) readToRelease(conn zksession.Conn, p rebalance.Partition, sid int64) (r outcome, version int32, ours bool) {
	_, stat, err := conn.Get(c.path(p))
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return outcome{err: fmt.Errorf("read claim %s: %w", p, err)}, 0, false
	case stat.EphemeralOwner != sid:
		c.cfg.Logger.Warn("zkalloc: claim to release belongs to another session; leaving it", "partition", p.String())
	default:
		return outcome{}, stat.Version, true
	}
	if err := c.releaseHold(conn, p, sid, 0, false); err != nil {
		return outcome{err: err}, 0, false
	}
	return outcome{state: stateNotHeld}, 0, false
}

// releaseAll releases ps. Like [Actor.release] it reads each claim first,
// one request each, and deletes only those of session sid, with their
// hold records, but it deletes them in batches, each one multi-operation
// whose deletes of claims also check that the node is still the version
// read. A batch is deleted as soon as its
// claims are read, several batches at a time, so that a member taking
// them over can claim the first while the others are read (the caller
// passes ps in order, the order in which that member claims them). The
// partitions of a batch that failed are released one at a time by
// release.
//
// A release of many claims first deletes, without reading them, those it
// can prove this session's (see claims_proof.go).
func (c *Actor) releaseAll(conn zksession.Conn, ps []rebalance.Partition, sid int64) []outcome {
	if len(ps) <= provenReleaseAbove || !c.baseOK {
		return c.releaseRead(conn, ps, sid)
	}
	var mine, other []int // indexes into ps
	for i, p := range ps {
		if _, ok := c.ours[p]; ok {
			mine = append(mine, i)
		} else {
			other = append(other, i)
		}
	}
	pick := func(idx []int) []rebalance.Partition {
		sub := make([]rebalance.Partition, len(idx))
		for k, i := range idx {
			sub[k] = ps[i]
		}
		return sub
	}
	results := make([]outcome, len(ps))
	proven := make([]outcome, len(mine))
	for _, k := range c.releaseProven(conn, pick(mine), sid, proven) {
		other = append(other, mine[k])
	}
	for k, i := range mine {
		results[i] = proven[k]
	}
	slices.Sort(other) // in order still, for the member taking them over
	for k, r := range c.releaseRead(conn, pick(other), sid) {
		results[other[k]] = r
	}
	return results
}

// releaseRead is [Actor.releaseAll] with a read of every claim.
func (c *Actor) releaseRead(conn zksession.Conn, ps []rebalance.Partition, sid int64) []outcome {
	if len(ps) < 2 {
		return inParallel(ps, func(p rebalance.Partition) outcome { return c.release(conn, p, sid) })
	}
	results := make([]outcome, len(ps))
	version := make([]int32, len(ps))
	ours := make([]bool, len(ps)) // read as session sid's: to delete
	bounds := batches(len(ps), func(i int) int { return c.releaseBytes(ps[i]) })
	failed := make([]bool, len(bounds)-1)
	inflight.DoAtMost(len(failed), releaseBatchesInFlight, func(b int) {
		lo, hi := bounds[b], bounds[b+1]
		inflight.Do(hi-lo, func(k int) { i := lo + k; results[i], version[i], ours[i] = c.readToRelease(conn, ps[i], sid) })
		var ops []any
		for i := lo; i < hi; i++ {
			if ours[i] {
				ops = append(ops, releaseOps(c.path(ps[i]), c.record(ps[i]), version[i])...)
			}
		}
		if len(ops) == 0 {
			return
		}
		if conn.SessionID() != sid { // the nodes read are gone with the session
			failed[b] = true
			return
		}
		if err := c.multiCounted(conn, ops, len(ops)/2); err != nil {
			failed[b] = true
			return
		}
		c.cfg.Logger.Debug("zkalloc: released a batch", "first", ps[lo].String(), "claims", len(ops)/2)
		for i := lo; i < hi; i++ {
			if ours[i] {
				results[i] = outcome{state: stateNotHeld}
			}
		}
	})
	var rest []int
	for b, bad := range failed {
		for i := bounds[b]; bad && i < bounds[b+1]; i++ {
			if ours[i] {
				rest = append(rest, i)
			}
		}
	}
	inflight.Do(len(rest), func(k int) { results[rest[k]] = c.release(conn, ps[rest[k]], sid) })
	return results
}

// releaseBytes is about how many bytes of request releasing p adds: the
// deletes of its claim and hold record, each path with its headers.
func (c *Actor) releaseBytes(p rebalance.Partition) int {
	return len(c.path(p)) + 64 + len(c.record(p)) + 64
}
