package rebalance

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
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

// acquireAll claims ps in batches, and claims one at a time, with
// [Claims.acquire], the partitions of every batch that failed: a
// multi-operation is all or nothing, so one claim that exists, held by
// another session or left by an earlier one of ours, fails its whole batch,
// and acquire tells those cases apart. A batch whose outcome is unknown
// (the connection dropped) is retried the same way: acquire finds a claim
// of ours that was created after all.
func (c *Claims) acquireAll(conn session.Conn, ps []Partition, sid int64) []outcome {
	results := make([]outcome, len(ps))
	if len(ps) < 2 {
		inflight.Do(len(ps), func(i int) { results[i] = c.acquire(conn, ps[i], sid) })
		return results
	}
	data, acl := []byte(c.cfg.Member), zk.WorldACL(zk.PermAll)
	paths := make([]string, len(ps))
	for i, p := range ps {
		paths[i] = c.path(p)
	}
	bounds := batches(paths, len(data))
	outcomes := make([]batchOutcome, len(bounds)-1)
	create := func(b int) {
		batch := paths[bounds[b]:bounds[b+1]]
		ops := make([]any, len(batch))
		for i, path := range batch {
			ops[i] = &zk.CreateRequest{Path: path, Data: data, Acl: acl, Flags: zk.FlagEphemeral}
		}
		res, err := conn.Multi(ops...)
		switch {
		case errors.Is(err, zk.ErrNoNode) && len(res) == len(ops):
			outcomes[b] = batchNoParent // no claim can exist without the parent
			return
		case err != nil && len(res) == len(ops):
			outcomes[b] = batchRolledBack // the server answered each op
			return
		case err != nil:
			outcomes[b] = batchUnknown
			return
		}
		outcomes[b] = batchDone
		c.cfg.Logger.Debug("zkalloc: claimed a batch", "first", batch[0], "claims", len(batch))
		r := outcome{state: held}
		if conn.SessionID() != sid {
			r = outcome{err: errSessionMoved(sid, "claim"), unsure: true}
		}
		for i := range batch {
			results[bounds[b]+i] = r
		}
	}
	inflight.DoAtMost(len(outcomes), claimBatchesInFlight, create)
	// The group's first claims find no parent node: create it and try
	// those batches again.
	var again []int
	for b, o := range outcomes {
		if o == batchNoParent {
			again = append(again, b)
		}
	}
	if len(again) > 0 && zkpath.Ensure(conn, c.cfg.Paths.Owners()) == nil {
		inflight.DoAtMost(len(again), claimBatchesInFlight, func(k int) { create(again[k]) })
	}
	var rest []int // partitions to claim one at a time, with unknown[i] set for those of a batch that got no answer
	unknown := make([]bool, len(ps))
	for b, o := range outcomes {
		for i := bounds[b]; o != batchDone && i < bounds[b+1]; i++ {
			rest = append(rest, i)
			unknown[i] = o == batchUnknown
		}
	}
	inflight.Do(len(rest), func(k int) {
		i := rest[k]
		r := c.acquire(conn, ps[i], sid)
		if r.err != nil && unknown[i] {
			r.unsure = true // the batch may have created it
		}
		results[i] = r
	})
	return results
}

// batchOutcome is what became of one multi-operation of creates.
type batchOutcome int

const (
	batchDone       batchOutcome = iota // every claim created
	batchRolledBack                     // none created: one of them failed
	batchNoParent                       // none created: the owners node is missing
	batchUnknown                        // no answer: all or none created
)

// releaseAll releases ps. Like [Claims.release] it reads each claim first,
// one request each, and deletes only those of session sid, but it deletes
// them in batches, each one multi-operation whose deletes also check that
// the node is still the version read. The partitions of a batch that
// failed are released one at a time by release.
func (c *Claims) releaseAll(conn session.Conn, ps []Partition, sid int64) []outcome {
	results := make([]outcome, len(ps))
	if len(ps) < 2 {
		inflight.Do(len(ps), func(i int) { results[i] = c.release(conn, ps[i], sid) })
		return results
	}
	version := make([]int32, len(ps))
	ours := make([]bool, len(ps)) // read as session sid's: to delete
	inflight.Do(len(ps), func(i int) { results[i], version[i], ours[i] = c.readToRelease(conn, ps[i], sid) })
	var del []int // indexes into ps of the claims to delete
	var paths []string
	for i, ok := range ours {
		if ok {
			del = append(del, i)
			paths = append(paths, c.path(ps[i]))
		}
	}
	bounds := batches(paths, 0)
	done := make([]bool, len(bounds)-1)
	inflight.DoAtMost(len(done), claimBatchesInFlight, func(b int) {
		ops := make([]any, 0, bounds[b+1]-bounds[b])
		for k := bounds[b]; k < bounds[b+1]; k++ {
			ops = append(ops, &zk.DeleteRequest{Path: paths[k], Version: version[del[k]]})
		}
		if conn.SessionID() != sid { // the nodes read are gone with the session
			return
		}
		if _, err := conn.Multi(ops...); err != nil {
			return
		}
		done[b] = true
		c.cfg.Logger.Debug("zkalloc: released a batch", "first", paths[bounds[b]], "claims", len(ops))
		for _, i := range del[bounds[b]:bounds[b+1]] {
			results[i] = outcome{state: notHeld}
		}
	})
	var rest []int
	for b, ok := range done {
		for k := bounds[b]; !ok && k < bounds[b+1]; k++ {
			rest = append(rest, del[k])
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
