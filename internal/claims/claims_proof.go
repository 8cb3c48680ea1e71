package claims

import (
	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A release reads each claim before deleting it, so that it never deletes
// a node that is not this session's: the next owner may have created the
// claim after someone else deleted ours. At 100,000 partitions those reads
// are most of a hand-off (50,000 claims: 50,000 reads). A proof from the
// owners node's Stat replaces them when nobody else deleted a claim.
//
// Every create of a child of the owners node adds one to its Cversion and
// to its NumChildren; every delete adds one to Cversion and takes one from
// NumChildren, whoever deletes, and so does a session's expiry (checked
// against ZooKeeper 3.8). A rolled-back multi-operation changes neither.
// So Cversion - NumChildren grows by exactly two for each delete of a
// claim and by nothing else. If, between two reads of the Stat, it grew by
// twice the deletes this actor saw succeed in between, nobody else deleted
// a claim in between.
//
// A claim this session held at the first read, or created or read as its
// own after it, can stop being ours only by being deleted: an ephemeral
// node's owner never changes, and another session can have a node at the
// path only after ours was deleted. So when the second read proves that
// nobody else deleted a claim, every claim in ours is still this
// session's at that read. This actor keeps such a read as its base
// (baseOK); a release deletes the claims it proves, a few batches after a
// new read each (releaseGate), without reading them.
//
// The count of our own deletes only ever undercounts (a delete whose
// outcome is unknown is not counted), which makes a proof fail, never
// succeed wrongly. An owners node deleted and created again is told apart
// by its Czxid. A release that cannot prove its claims reads them as
// before. What the proof leaves, as the reads do, is the time between the
// read it rests on and the delete: the delete carries no check of the
// node's owner (ZooKeeper has none), so a claim deleted from outside and
// created again by another session within those milliseconds would be
// deleted. That window is one round trip plus at most releaseGate
// multi-operations here, against one round trip plus the reads queued
// before the delete with a read of each claim; a follower's lag behind
// its leader widens both alike. With hold records (see holds.go) no member
// of this version creates such a claim while this session's record
// stands; one of an older version, which knows nothing of records, could.
//
// The hold records are deleted with their claims, in the same
// multi-operations, whatever their version: while a claim is this
// session's, its record can be no other's (see releaseOps).

// provenReleaseAbove is the fewest claims released at once for which a
// release tries the proof: below it, one read of the owners node per
// releaseGate batches saves little.
const provenReleaseAbove = 1000

// releaseGate is how many batches of deletes a proven release sends after
// each read of the owners node, all at once.
const releaseGate = 8

// The counter saturates. The server keeps, for each node, the count of
// the children ever created under it (StatPersisted.cversion), and
// reports Cversion = 2 × that count − NumChildren (DataNode.copyStat),
// in Java's int32 arithmetic, so the proof's Cversion − NumChildren is
// 2 × (creates − children) = 2 × deletes. Since ZooKeeper 3.6 a create
// raises the persisted count only if the new value is larger
// (DataTree.createNode: "if (parentCVersion > parent.stat.getCversion())",
// PrepRequestProcessor adding one), so after 2^31 − 1 creates it stays at
// Integer.MAX_VALUE: each create then takes two from Cversion −
// NumChildren, and an outsider's delete and a new owner's create cancel
// out. The reported Cversion is then 2 × MAX_VALUE − NumChildren, that is
// −2 − NumChildren as an int32: Cversion + NumChildren == −2, which no
// count below the bound gives (2 × count ≡ −2 mod 2^32 only for
// count = MAX_VALUE, or −1, which a count never is). Older servers wrap
// the count instead, and the arithmetic, wrapping alike, holds; they pass
// through the same value once, for one create, and the proof is then
// refused for nothing. A saturated owners node proves nothing, here or in
// the periodic check (see lookAtOwners): releases read every claim, and
// every check reads every claim held, until the node is created afresh
// (see warnSaturated).

// ownersMark is what the proof needs of the owners node's Stat.
type ownersMark struct {
	czxid     int64 // tells the node from one deleted and created again
	twice     int32 // Cversion - NumChildren: twice the deletes ever under it
	saturated bool  // the count of creates has stopped: nothing can be proven
}

func markOf(st *zk.Stat) ownersMark {
	return ownersMark{czxid: st.Czxid, twice: st.Cversion - st.NumChildren, saturated: st.Cversion+st.NumChildren == -2}
}

// proves reports whether the owners node's Stat m, read after the base,
// proves that nobody but this actor deleted a claim since the base.
// int32 arithmetic wraps like the server's counters. The count of creates
// only grows until it saturates, so m not saturated means it was not at
// the base either, nor in between.
func (c *Actor) proves(m ownersMark) bool {
	return c.baseOK && !m.saturated && m.czxid == c.base.czxid && m.twice-c.base.twice == 2*c.gone.Load()
}

// rebase makes m, read when every claim in ours was this session's, the
// base of the next proof; a saturated m is none.
func (c *Actor) rebase(m ownersMark) {
	c.base, c.baseOK = m, !m.saturated
	c.gone.Store(0)
}

// warnSaturated logs, once per actor, that the owners node's counter has
// saturated. Only then can the node be deleted: the delete fails while
// any claim is under it.
func (c *Actor) warnSaturated() {
	if c.saturatedLogged {
		return
	}
	c.saturatedLogged = true
	c.cfg.Logger.Warn("zkalloc: the owners node has had 2^31 claims created under it, and ZooKeeper no longer counts them: releases now read every claim and every check reads every claim held, which costs a read per claim. To restore the cheaper path, stop every member of the group, wait until the node has no children (a crashed member's claims go when its session expires), delete the node (ZooKeeper refuses while a claim is under it) and start the members again. Do not delete the hold records",
		"path", c.cfg.Paths.Owners())
}

// readOwners reads the owners node's Stat.
func (c *Actor) readOwners(conn zksession.Conn) (m ownersMark, exists bool, err error) {
	exists, st, err := conn.Exists(c.cfg.Paths.Owners())
	if err != nil || !exists {
		return ownersMark{}, exists, err
	}
	return markOf(st), true, nil
}

// baseFromNothing makes the owners node, as it is now, the base while
// this session holds no claim, and creates it if it is missing.
func (c *Actor) baseFromNothing(conn zksession.Conn) {
	m, exists, err := c.readOwners(conn)
	if err == nil && !exists && zkpath.Ensure(conn, c.cfg.Paths.Owners(), c.cfg.ACL...) == nil {
		m, exists, err = c.readOwners(conn)
	}
	if err == nil && exists {
		c.rebase(m)
	}
}

// deleted counts n deletes of claims by this actor that succeeded.
func (c *Actor) deleted(n int) { c.gone.Add(int32(n)) }

// releaseProven deletes the claims of ps, all in ours, and their hold
// records, in batches without reading them, for as long as the owners
// node proves them ours (see above). It sets results for those it deleted
// and returns the indexes into ps of the others, to release with reads.
// A batch with a hold record missing (deleted from outside) fails, and is
// released with reads.
func (c *Actor) releaseProven(conn zksession.Conn, ps []rebalance.Partition, sid int64, results []outcome) (left []int) {
	bounds := batches(len(ps), func(i int) int { return c.releaseBytes(ps[i]) })
	nb := len(bounds) - 1
	done := make([]bool, nb)
	for g := 0; g < nb; g += releaseGate {
		if conn.SessionID() != sid {
			break
		}
		m, exists, err := c.readOwners(conn)
		if exists && m.saturated {
			c.warnSaturated()
		}
		if err != nil || !exists || !c.proves(m) {
			c.baseOK = false
			c.cfg.Logger.Debug("zkalloc: claims to release not proven ours; reading them", "claims", len(ps)-bounds[g])
			break
		}
		c.rebase(m)
		hi := min(g+releaseGate, nb)
		inflight.DoAtMost(hi-g, releaseGate, func(k int) {
			b := g + k
			ops := make([]any, 0, 2*(bounds[b+1]-bounds[b]))
			for _, p := range ps[bounds[b]:bounds[b+1]] {
				ops = append(ops, releaseOps(c.path(p), c.record(p), -1)...)
			}
			if c.multiCounted(conn, ops, len(ops)/2) == nil {
				done[b] = true
				c.cfg.Logger.Debug("zkalloc: released a batch", "first", ps[bounds[b]].String(), "claims", len(ops)/2)
			}
		})
	}
	for b := range nb {
		for i := bounds[b]; i < bounds[b+1]; i++ {
			if done[b] {
				results[i] = outcome{state: stateNotHeld}
			} else {
				left = append(left, i)
			}
		}
	}
	return left
}

// deleteCounted is conn.Delete, counting a delete that succeeded.
func (c *Actor) deleteCounted(conn zksession.Conn, path string, version int32) error {
	err := conn.Delete(path, version)
	if err == nil {
		c.deleted(1)
	}
	return err
}

// multiCounted is conn.Multi of deletes, of which claims are of claims,
// counting those if it succeeded.
func (c *Actor) multiCounted(conn zksession.Conn, ops []any, claims int) error {
	_, err := conn.Multi(ops...)
	if err == nil {
		c.deleted(claims)
	}
	return err
}
