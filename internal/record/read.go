package record

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/rebalance"
)

// readHead reads the head and arms a watch on it: with GetW, or ExistsW
// when there is none. While a watch armed earlier in this connection has
// not fired, it reads nothing: the head is as last read. ZooKeeper sends
// a watch's event before any later reply on the connection, and the
// client closes the watch's channel before it hands that reply over (see
// internal/partset's TestWatchFiresBeforeLaterReply), so the head last
// read is still the head as of the member and partition lists that made
// the job, which were read after it; a head written since fires the
// watch, which the caller waits on. (A compare-and-set on a head changed
// meanwhile fails, and the head is read again.) It first takes what the
// last write left to do (see [Runner.startAfter]), or returns ctx's
// error if ctx ends while that is under way.
func (r *Runner) readHead(ctx context.Context) error {
	if err := r.takeAfter(ctx); err != nil {
		return err
	}
	conn := r.st.Conn
	path := r.cfg.Paths.Assignment()
	if r.watch != nil && fired(r.watch) {
		r.watch = nil
	}
	if r.watch != nil && !r.reread {
		return nil
	}
	if r.watch != nil {
		data, stat, err := conn.Get(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			r.setHead(nil, nil) // deleted: the pending watch fires for it
			r.reread = false
			return nil
		case err != nil:
			return zkErr("read the head", err)
		}
		r.setHead(stat, data)
		r.reread = false
		return nil
	}
	data, stat, w, err := armHead(conn, path)
	if errors.Is(err, errAgain) {
		r.watch, r.reread = w, true // read it under this watch
		return err
	}
	if err != nil {
		return err
	}
	r.watch, r.reread = w, false
	r.setHead(stat, data)
	return nil
}

// armHead reads the head at path with a watch: GetW, or ExistsW if there
// is none (stat nil then). It returns errAgain, with the watch armed, if
// the head was created between the two; a *zkError if a request failed.
func armHead(conn zksession.Conn, path string) (data []byte, stat *zk.Stat, w <-chan zk.Event, err error) {
	data, stat, w, err = conn.GetW(path)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, _, w, err = conn.ExistsW(path)
		if err != nil {
			return nil, nil, nil, zkErr("watch the head", err)
		}
		if ok { // created since: read it, under the watch just armed
			return nil, nil, w, errAgain
		}
		return nil, nil, w, nil
	}
	if err != nil {
		return nil, nil, nil, zkErr("read the head", err)
	}
	return data, stat, w, nil
}

// setHead takes the head read: stat nil when there is none. A head
// whose data cannot be decoded (empty, as created before a record too
// large for one request, or broken) counts as none, and the next writer
// writes over it; one of a later format (assignment.ErrNewerFormat), as
// a newer version of zkalloc writes it, is left alone: newer is set, and
// the runner waits for a head it can read.
func (r *Runner) setHead(stat *zk.Stat, data []byte) {
	if stat == nil {
		r.present, r.version, r.mzxid, r.headData, r.head, r.newer = false, 0, 0, nil, nil, false
		return
	}
	if r.present && stat.Mzxid == r.mzxid { // unchanged since the last read
		r.version = stat.Version
		return
	}
	r.present, r.version, r.mzxid, r.headData, r.head, r.newer = true, stat.Version, stat.Mzxid, data, nil, false
	if len(data) == 0 {
		return
	}
	h, err := assignment.DecodeHead(data)
	if errors.Is(err, assignment.ErrNewerFormat) {
		r.newer = true
		r.warn("decode the head", err, "then", "waiting for a head this version reads: upgrade this member (its partitions stay as they are meanwhile)")
		return
	}
	if err != nil {
		r.warn("decode the head", err, "then", "a writer writes over it")
		return
	}
	r.head = &h
	r.keepNamed(h)
}

// keepNamed drops the cached share data of the nodes h does not name.
func (r *Runner) keepNamed(h assignment.Head) {
	named := make(map[string]bool, len(h.Members))
	for _, e := range h.Members {
		named[e.Node] = true
	}
	for n := range r.data {
		if !named[n] {
			delete(r.data, n)
		}
	}
}

// share returns this member's share in the head read: from the cache if
// its node is the one last decoded, else read and decoded. A node gone
// means the head moved on (errAgain); gone twice under one head, the
// record is broken, and that is an error.
func (r *Runner) share(c *call) ([]rebalance.Partition, error) {
	e, ok := r.head.Of(r.cfg.Member)
	if !ok || e.Node == "" {
		return nil, nil
	}
	if e.Node == r.mineNode {
		return slices.Clone(r.mine), nil
	}
	data, ok := r.data[e.Node]
	if !ok {
		var err error
		data, _, err = r.st.Conn.Get(r.cfg.Paths.Share(e.Node))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			r.reread = true
			if c.missing == e.Node && c.missingAt == r.mzxid {
				return nil, fmt.Errorf("record: share node %s of %q, named by the head of generation %d, is missing", e.Node, r.cfg.Member, r.head.Generation)
			}
			c.missing, c.missingAt = e.Node, r.mzxid
			return nil, errAgain
		case err != nil:
			return nil, zkErr("read this member's share", err)
		}
		r.data[e.Node] = data
	}
	sh, err := assignment.DecodeShare(e, data)
	if err != nil {
		delete(r.data, e.Node)
		return nil, fmt.Errorf("record: share of %q: %w", r.cfg.Member, err)
	}
	r.mineNode, r.mine = e.Node, sh.Owned
	return slices.Clone(sh.Owned), nil
}

// previous returns the placement of the head read, to compute the next
// one from: the one cached if it is that head's, else decoded from every
// share node, those not cached read in a pipelined batch. A node gone
// means the head moved on (errAgain). A record that cannot be decoded,
// or whose node is gone twice under one head, is broken: previous
// reports it (ok false), and the caller starts over as if there were
// none.
func (r *Runner) previous(c *call) (pl rebalance.Placement, ok bool, err error) {
	if r.warm() {
		return r.placement, true, nil
	}
	var missing []string
	for _, e := range r.head.Members {
		if _, cached := r.data[e.Node]; e.Node != "" && !cached {
			missing = append(missing, e.Node)
		}
	}
	got := make([][]byte, len(missing))
	errs := make([]error, len(missing))
	conn := r.st.Conn
	inflight.Do(len(missing), func(i int) {
		got[i], _, errs[i] = conn.Get(r.cfg.Paths.Share(missing[i]))
	})
	for i, err := range errs {
		switch {
		case errors.Is(err, zk.ErrNoNode):
			r.reread = true
			if c.missing == missing[i] && c.missingAt == r.mzxid {
				r.warn("read the record", fmt.Errorf("share node %s, named by the head of generation %d, is missing; computing as if there were no record", missing[i], r.head.Generation))
				return rebalance.Placement{}, false, nil
			}
			c.missing, c.missingAt = missing[i], r.mzxid
			return rebalance.Placement{}, false, errAgain
		case err != nil:
			return rebalance.Placement{}, false, zkErr("read the record's shares", err)
		}
	}
	for i, n := range missing {
		r.data[n] = got[i]
	}
	pl, err = assignment.Decode(*r.head, r.data)
	if err != nil {
		r.warn("decode the record", err, "then", "computing as if there were no record")
		return rebalance.Placement{}, false, nil
	}
	r.placement, r.placementOf = pl, r.headData
	return pl, true, nil
}
