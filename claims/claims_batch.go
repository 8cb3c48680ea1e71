package claims

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// Claims are created a batch at a time, each batch one multi-operation,
// which ZooKeeper applies as one transaction: the server's cost is mostly
// per request, not per node, so a member that claims many partitions at
// once, as on a group's first start or after a member crashed, does so
// about ten times faster than one create at a time (about 80,000 against
// 7,500 claims a second here, both with requests pipelined).
const (
	claimBatch      = 100       // claims per multi-operation
	claimBatchBytes = 256 << 10 // and their paths and data, well below ZooKeeper's 1 MB
)

// claimBatchesInFlight bounds the multi-operations in flight at once.
const claimBatchesInFlight = 4

// releaseBatchesInFlight bounds the batches being released at once: each
// reads its claims, then deletes them in one multi-operation, so more of
// them keep the server busy while each waits for its replies (a hand-off
// of 50,000 claims took 8.5 s with 4, 6.9 s with 16 here).
const releaseBatchesInFlight = 16

// acquireAll claims ps in batches. A multi-operation is all or nothing,
// so one claim that exists fails its whole batch; the claims of such a
// batch, most of them held by another member in a hand-off, are each looked
// at with a watch, one request, and those found free are created in
// batches again. What is left, claims left by an earlier session of ours
// and batches whose outcome is unknown (the connection dropped), is
// claimed one at a time by [Claims.acquire], which finds a claim of ours
// that was created after all.
//
// If the first round of batches leaves claims to look at, created (if
// not nil) is called with the indexes into ps of the claims it created and
// their outcomes before the looks begin: a member joining a large group
// finds most of what it wants held by others, and one request per claim
// takes seconds; what it holds already is reported without waiting for
// them (see [Claims.work]).
func (c *Claims) acquireAll(conn session.Conn, ps []partitions.Partition, sid int64, created func(idx []int, results []outcome)) []outcome {
	if len(ps) < 2 {
		return inParallel(ps, func(p partitions.Partition) outcome { return c.acquire(conn, p, sid) })
	}
	results := make([]outcome, len(ps))
	all := make([]int, len(ps))
	for i := range all {
		all[i] = i
	}
	status := make([]batchOutcome, len(ps))
	culprit := make([]int, len(ps))
	c.createAll(conn, ps, all, sid, results, status, culprit)
	var look, done []int
	for i, st := range status {
		switch st {
		case batchRolledBack:
			look = append(look, i)
		case batchDone:
			done = append(done, i)
		}
	}
	if created != nil && len(done) < len(ps) {
		created(done, results)
	}
	var free []int
	deferred := map[int][]int{} // by the index of the claim they wait on
	if len(look) > groupLooksAbove {
		look, free = c.group(ps, look, culprit, deferred)
	}
	found := make([]claimFound, len(ps))
	inflight.Do(len(look), func(k int) { i := look[k]; results[i], found[i], _ = c.look(conn, ps[i], sid) })
	var again []int // deferred behind a claim that turned out not to be another's
	for w, ds := range deferred {
		switch {
		case found[w] == foundFinal && results[w].err == nil && results[w].state == stateWaiting:
			for _, i := range ds {
				results[i], status[i] = outcome{state: stateDeferred, behind: ps[w]}, batchDone
			}
		case found[w] == foundFree:
			// Released before it was looked at: the holder releases a
			// batch at a time, so the rest of the batch most likely is
			// free too. Created in batches, not looked at one by one; a
			// batch that fails is left to acquire.
			free = append(free, ds...)
		default:
			again = append(again, ds...)
		}
	}
	inflight.Do(len(again), func(k int) { i := again[k]; results[i], found[i], _ = c.look(conn, ps[i], sid) })
	for _, i := range slices.Concat(look, again) {
		switch found[i] {
		case foundFinal:
			status[i] = batchDone
		case foundFree:
			free = append(free, i)
		} // foundStale: left rolled back, for acquire
	}
	slices.Sort(free) // in order, for batches like the holder's
	c.createAll(conn, ps, free, sid, results, status, nil)
	var rest []int
	for i, st := range status {
		if st != batchDone {
			rest = append(rest, i)
		}
	}
	inflight.Do(len(rest), func(k int) {
		i := rest[k]
		r := c.acquire(conn, ps[i], sid)
		if r.err != nil && status[i] == batchUnknown {
			r.unsure = true // the batch may have created it
		}
		results[i] = r
	})
	return results
}

// createAll creates the claims of the partitions ps[i] for i in idx, in
// batches, and sets status[i] to each batch's outcome and results[i] for
// those created. A group's first claims find no parent node: it creates
// that and tries those batches again. For the claims of a batch rolled
// back because one of them exists, culprit[i] (if culprit is not nil) is
// the index into ps of that one, the first of the batch that did; -1 for
// the others.
func (c *Claims) createAll(conn session.Conn, ps []partitions.Partition, idx []int, sid int64, results []outcome, status []batchOutcome, culprit []int) {
	data := []byte(c.cfg.Member)
	paths := make([]string, len(idx))
	for k, i := range idx {
		paths[k] = c.path(ps[i])
	}
	bounds := batches(paths, len(data))
	create := func(b int) {
		ops := createOps(paths[bounds[b]:bounds[b+1]], data, c.cfg.ACL)
		res, err := conn.Multi(ops...)
		st, r := batchDone, outcome{state: stateHeld}
		switch {
		case errors.Is(err, zk.ErrNoNode) && len(res) == len(ops):
			st = batchNoParent // no claim can exist without the parent
		case err != nil && len(res) == len(ops):
			st = batchRolledBack // the server answered each op
		case err != nil:
			st = batchUnknown
		case conn.SessionID() != sid:
			r = outcome{err: errSessionMoved(sid, "claim"), unsure: true}
			fallthrough
		default:
			r.token = tokenOf(res)
			c.cfg.Logger.Debug("zkalloc: claimed a batch", "first", paths[bounds[b]], "claims", len(ops)-1)
		}
		first := -1
		if st == batchRolledBack {
			for k, op := range res[:min(len(res), bounds[b+1]-bounds[b])] { // the creates, not the closing SetData
				if errors.Is(op.Error, zk.ErrNodeExists) {
					first = idx[bounds[b]+k]
					break
				}
			}
		}
		for _, i := range idx[bounds[b]:bounds[b+1]] {
			status[i] = st
			if st == batchDone {
				results[i] = r
			}
			if culprit != nil {
				culprit[i] = first
			}
		}
	}
	inflight.DoAtMost(len(bounds)-1, claimBatchesInFlight, create)
	var again []int
	for b := range len(bounds) - 1 {
		if status[idx[bounds[b]]] == batchNoParent {
			again = append(again, b)
		}
	}
	if len(again) > 0 && zkpath.Ensure(conn, c.cfg.Paths.Owners(), c.cfg.ACL...) == nil {
		inflight.DoAtMost(len(again), claimBatchesInFlight, func(k int) { create(again[k]) })
	}
}

// createOps returns the operations of one transaction that creates the
// claims at paths with data.
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
func createOps(paths []string, data []byte, acl []zk.ACL) []any {
	ops := make([]any, 0, len(paths)+1)
	for _, path := range paths {
		ops = append(ops, &zk.CreateRequest{Path: path, Data: data, Acl: acl, Flags: zk.FlagEphemeral})
	}
	return append(ops, &zk.SetDataRequest{Path: paths[0], Data: data, Version: 0})
}

// tokenOf returns the creation zxid of the claims a transaction of
// createOps created, from the response of its last operation.
func tokenOf(res []zk.MultiResponse) int64 {
	if len(res) == 0 || res[len(res)-1].Stat == nil {
		return 0
	}
	return res[len(res)-1].Stat.Czxid
}

// look reads p's claim with a watch, when creating it found it there (or a
// batch with it failed), and says what it found: a claim held by another
// session (the outcome: waiting for the watch), by this one (held: an
// earlier create went through), by an earlier one of ours (foundStale, to
// delete and create again), or no claim (foundFree, released meanwhile;
// the watch then fires for our own create and is dropped).
func (c *Claims) look(conn session.Conn, p partitions.Partition, sid int64) (outcome, claimFound, *zk.Stat) {
	exists, stat, watch, err := conn.ExistsW(c.path(p))
	switch {
	case err != nil:
		return outcome{err: fmt.Errorf("watch claim %s: %w", p, err)}, foundFinal, nil
	case !exists:
		return outcome{}, foundFree, nil
	case stat.EphemeralOwner == sid:
		return outcome{state: stateHeld, token: stat.Czxid}, foundFinal, stat
	case c.ownedBefore(stat.EphemeralOwner):
		return outcome{}, foundStale, stat
	}
	c.cfg.Logger.Debug("zkalloc: waiting for claim", "partition", p.String(), "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
	return outcome{state: stateWaiting, watch: watch, holder: stat.EphemeralOwner}, foundFinal, stat
}

// claimFound is what [Claims.look] found.
type claimFound int

const (
	foundFinal claimFound = iota // its outcome is final
	foundFree                    // no claim: create it
	foundStale                   // a claim of an earlier session of ours: replace it
)

// batchOutcome is what became of one multi-operation of creates.
type batchOutcome int

const (
	batchDone       batchOutcome = iota // every claim created (or, after look, the outcome final)
	batchRolledBack                     // none created: one of them failed
	batchNoParent                       // none created: the owners node is missing
	batchUnknown                        // no answer: all or none created
)

// releaseAll releases ps. Like [Claims.release] it reads each claim first,
// one request each, and deletes only those of session sid, but it deletes
// them in batches, each one multi-operation whose deletes also check that
// the node is still the version read. A batch is deleted as soon as its
// claims are read, several batches at a time, so that a member taking
// them over can claim the first while the others are read (the caller
// passes ps in order, the order in which that member claims them). The
// partitions of a batch that failed are released one at a time by
// release.
//
// A release of many claims first deletes, without reading them, those it
// can prove this session's (see claims_proof.go).
func (c *Claims) releaseAll(conn session.Conn, ps []partitions.Partition, sid int64) []outcome {
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
	pick := func(idx []int) []partitions.Partition {
		sub := make([]partitions.Partition, len(idx))
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

// releaseRead is [Claims.releaseAll] with a read of every claim.
func (c *Claims) releaseRead(conn session.Conn, ps []partitions.Partition, sid int64) []outcome {
	if len(ps) < 2 {
		return inParallel(ps, func(p partitions.Partition) outcome { return c.release(conn, p, sid) })
	}
	results := make([]outcome, len(ps))
	version := make([]int32, len(ps))
	ours := make([]bool, len(ps)) // read as session sid's: to delete
	paths := make([]string, len(ps))
	for i, p := range ps {
		paths[i] = c.path(p)
	}
	bounds := batches(paths, 0)
	failed := make([]bool, len(bounds)-1)
	inflight.DoAtMost(len(failed), releaseBatchesInFlight, func(b int) {
		lo, hi := bounds[b], bounds[b+1]
		inflight.Do(hi-lo, func(k int) { i := lo + k; results[i], version[i], ours[i] = c.readToRelease(conn, ps[i], sid) })
		var ops []any
		for i := lo; i < hi; i++ {
			if ours[i] {
				ops = append(ops, &zk.DeleteRequest{Path: paths[i], Version: version[i]})
			}
		}
		if len(ops) == 0 {
			return
		}
		if conn.SessionID() != sid { // the nodes read are gone with the session
			failed[b] = true
			return
		}
		if err := c.multiCounted(conn, ops); err != nil {
			failed[b] = true
			return
		}
		c.cfg.Logger.Debug("zkalloc: released a batch", "first", paths[lo], "claims", len(ops))
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

// batches cuts paths into runs of at most claimBatch operations and
// claimBatchBytes of request, each path's operation carrying dataLen bytes
// of data, and returns where each run starts, followed by len(paths).
func batches(paths []string, dataLen int) []int {
	bounds := []int{0}
	if len(paths) == 0 {
		return bounds // no runs
	}
	size := 0
	for i, p := range paths {
		n := len(p) + dataLen + 64 // with the headers and ACL
		if from := bounds[len(bounds)-1]; i > from && (i-from == claimBatch || size+n > claimBatchBytes) {
			bounds = append(bounds, i)
			size = 0
		}
		size += n
	}
	return append(bounds, len(paths))
}

// errSessionMoved says that the client had moved on from session sid when
// a request returned, so the request may have run in the next session.
func errSessionMoved(sid int64, what string) error {
	return fmt.Errorf("%s: session %#x ended meanwhile; the request may have run in the next one", what, sid)
}

// group splits the claims to look at, indexes into ps of claims of
// rolled-back batches, by the claim each batch failed on (see
// claims_group.go): it returns the claims to look at (each batch's
// culprit, and the claims not to group) and those that were free, and
// fills deferred with the claims after each culprit, by its index.
func (c *Claims) group(ps []partitions.Partition, rolledBack, culprit []int, deferred map[int][]int) (look, free []int) {
	for _, i := range rolledBack {
		_, unsure := c.unsure[ps[i]]
		w := culprit[i]
		switch {
		case w < 0 || unsure || c.groups.single[ps[i]] || i == w:
			look = append(look, i)
		case i < w:
			free = append(free, i) // its create succeeded, then was rolled back
		default:
			deferred[w] = append(deferred[w], i)
		}
	}
	return look, free
}
