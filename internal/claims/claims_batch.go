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

// Claims are taken a batch at a time, each batch one multi-operation,
// which ZooKeeper applies as one transaction: the server's cost is mostly
// per request, not per node, so a member that claims many partitions at
// once, as on a group's first start or after a member crashed, does so
// about ten times faster than one at a time (about 80,000 against 7,500
// claims a second here, both with requests pipelined). Each partition
// takes two operations (its claim and its hold record, see holds.go), or
// three (a hold record of an ended session deleted first).
const (
	claimBatch      = 100       // partitions per multi-operation
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
// so one claim or hold record that exists fails its whole batch; the
// partitions of such a batch, most of them held by another member in a
// hand-off, are each looked at with a watch, one request, and those found
// free, or held by a session that has ended, are taken in batches again.
// What is left, claims left by an earlier session of ours and batches
// whose outcome is unknown (the connection dropped), is claimed one at a
// time by [Actor.acquire], which finds a claim of ours that was created
// after all.
//
// If the first round of batches leaves claims to look at, created (if
// not nil) is called with the indexes into ps of the claims it created and
// their outcomes before the looks begin: a member joining a large group
// finds most of what it wants held by others, and one request per claim
// takes seconds; what it holds already is reported without waiting for
// them (see [Actor.work]). The first round itself goes in chunks that
// double from [firstReport], each reported to created once made, so that
// the first member of a group of many free partitions starts once a few
// hundred are claimed, with the rest pending, not after all of them.
func (c *Actor) acquireAll(conn zksession.Conn, ps []rebalance.Partition, sid int64, ls *lives, created func(idx []int, results []outcome)) []outcome {
	if len(ps) < 2 {
		return inParallel(ps, func(p rebalance.Partition) outcome { return c.acquire(conn, p, sid, ls) })
	}
	results := make([]outcome, len(ps))
	all := make([]int, len(ps))
	for i := range all {
		all[i] = i
	}
	status := make([]batchOutcome, len(ps))
	culprit := make([]int, len(ps))
	// The first round goes in chunks that double, each reported when
	// created: the first member of a group of 100,000 free partitions
	// takes seconds to create their claims, and starts (with the rest
	// pending) once the first few hundred are made.
	for lo, n := 0, firstReport; lo < len(all); lo, n = lo+n, 2*n {
		chunk := all[lo:min(lo+n, len(all))]
		c.createAll(conn, ps, chunk, sid, nil, results, status, culprit)
		if created != nil && lo+len(chunk) < len(all) {
			created(doneOf(chunk, status), results)
		}
	}
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
	found := make([]looked, len(ps))
	inflight.Do(len(look), func(k int) { i := look[k]; found[i] = c.look(conn, ps[i], sid, ls) })
	var again []int // deferred behind a claim that turned out not to be another's
	for w, ds := range deferred {
		switch f := found[w]; {
		case f.found == foundFinal && f.r.err == nil && f.r.state == stateWaiting:
			for _, i := range ds {
				results[i], status[i] = outcome{state: stateDeferred, behind: ps[w]}, batchDone
			}
		case f.found == foundFree:
			// Released before it was looked at: the holder releases a
			// batch at a time, so the rest of the batch most likely is
			// free too. Created in batches, not looked at one by one; a
			// batch that fails is left to acquire.
			free = append(free, ds...)
		default:
			// Among them, the partitions of a holder whose session has
			// ended: each hold record is read (its version, and whose
			// it is), and they are taken over in batches.
			again = append(again, ds...)
		}
	}
	inflight.Do(len(again), func(k int) { i := again[k]; found[i] = c.lookExpectingEnded(conn, ps[i], sid, ls) })
	replace := make([]int32, len(ps))
	for i := range replace {
		replace[i] = noRecord
	}
	for _, i := range slices.Concat(look, again) {
		switch found[i].found {
		case foundFinal:
			results[i], status[i] = found[i].r, batchDone
		case foundFree:
			free = append(free, i)
		case foundReplace:
			replace[i] = found[i].record
			free = append(free, i)
		} // foundStale: left rolled back, for acquire
	}
	slices.Sort(free) // in order, for batches like the holder's
	c.createAll(conn, ps, free, sid, replace, results, status, nil)
	var rest []int
	for i, st := range status {
		if st != batchDone {
			rest = append(rest, i)
		}
	}
	inflight.Do(len(rest), func(k int) {
		i := rest[k]
		r := c.acquire(conn, ps[i], sid, ls)
		if r.err != nil && status[i] == batchUnknown {
			r.unsure = true // the batch may have created it
		}
		results[i] = r
	})
	return results
}

// firstReport is how many claims the first round creates before it
// reports: as many as go in flight at once.
const firstReport = claimBatch * claimBatchesInFlight

// doneOf returns the indexes among idx whose batch is done.
func doneOf(idx []int, status []batchOutcome) []int {
	var done []int
	for _, i := range idx {
		if status[i] == batchDone {
			done = append(done, i)
		}
	}
	return done
}

// createAll takes the partitions ps[i] for i in idx, in batches, and sets
// status[i] to each batch's outcome and results[i] for those taken.
// replace, if not nil, holds for each the version of a hold record to
// replace, or noRecord. A group's first claims find no parent nodes: it
// creates them and tries those batches again. For the partitions of a
// batch rolled back because one of them was held (its claim or hold
// record existed), culprit[i] (if culprit is not nil) is the index into
// ps of that one, the first of the batch that failed; -1 for the others.
func (c *Actor) createAll(conn zksession.Conn, ps []rebalance.Partition, idx []int, sid int64, replace []int32, results []outcome, status []batchOutcome, culprit []int) {
	ts := make([]take, len(idx))
	for k, i := range idx {
		ts[k] = take{p: ps[i], replace: noRecord}
		if replace != nil {
			ts[k].replace = replace[i]
		}
	}
	bounds := batches(len(ts), func(k int) int { return c.takeBytes(ts[k]) })
	create := func(b int) {
		lo, hi := bounds[b], bounds[b+1]
		ops, refs := c.takeOps(ts[lo:hi], sid)
		res, err := conn.Multi(ops...)
		st, r := batchDone, outcome{state: stateHeld}
		first := -1
		switch k := failedOp(res, len(ops)); {
		case err != nil && k < 0:
			st = batchUnknown
		case err != nil && errors.Is(res[k].Error, zk.ErrNoNode) && refs[k].kind != opDeleteRecord:
			st = batchNoParent // no claim can exist without the parents
		case err != nil:
			st, first = batchRolledBack, idx[lo+refs[k].i]
		case conn.SessionID() != sid:
			r = outcome{err: errSessionMoved(sid, "claim"), unsure: true}
			fallthrough
		default:
			r.token = tokenOf(res)
			c.cfg.Logger.Debug("zkalloc: claimed a batch", "first", ts[lo].p.String(), "claims", hi-lo)
		}
		for _, i := range idx[lo:hi] {
			status[i] = st
			if st == batchDone {
				results[i] = r
			}
			if culprit != nil {
				culprit[i] = first
			}
		}
	}
	nb, first := len(bounds)-1, 0
	if !c.parentsOK && nb > 1 {
		// Perhaps a group's first claims, or its first hold records: one
		// batch alone finds out, rather than every batch failing.
		create(0)
		if status[idx[0]] == batchNoParent && c.ensureParents(conn) == nil {
			create(0)
		}
		first = 1
	}
	inflight.DoAtMost(nb-first, claimBatchesInFlight, func(k int) { create(first + k) })
	var again []int
	for b := range nb {
		if status[idx[bounds[b]]] == batchNoParent {
			again = append(again, b)
		}
	}
	if len(again) > 0 && c.ensureParents(conn) == nil {
		inflight.DoAtMost(len(again), claimBatchesInFlight, func(k int) { create(again[k]) })
	}
	for b := range nb {
		if st := status[idx[bounds[b]]]; st == batchDone || st == batchRolledBack {
			c.parentsOK = true // the server found them
			break
		}
	}
}

// batchOutcome is what became of one multi-operation of creates.
type batchOutcome int

const (
	batchDone       batchOutcome = iota // every claim created (or, after look, the outcome final)
	batchRolledBack                     // none created: one of them failed
	batchNoParent                       // none created: the owners or holds node is missing
	batchUnknown                        // no answer: all or none created
)

// batches cuts n partitions into runs of at most claimBatch partitions
// and claimBatchBytes of request, partition i's operations taking size(i)
// bytes, and returns where each run starts, followed by n.
func batches(n int, size func(i int) int) []int {
	bounds := []int{0}
	if n == 0 {
		return bounds // no runs
	}
	total := 0
	for i := range n {
		s := size(i)
		if from := bounds[len(bounds)-1]; i > from && (i-from == claimBatch || total+s > claimBatchBytes) {
			bounds = append(bounds, i)
			total = 0
		}
		total += s
	}
	return append(bounds, n)
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
func (c *Actor) group(ps []rebalance.Partition, rolledBack, culprit []int, deferred map[int][]int) (look, free []int) {
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
