package record

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// maxDeletes bounds the deletes of one multi: ~1,000 paths of ~80 bytes
// stay far below jute.maxbuffer.
const maxDeletes = 1000

// write writes enc over the head read, with a compare-and-set on the
// version read (or the head's creation when there was none).
//
// In the usual case it is one multi: the head's setData (or create,
// which must come before its children) and the new share nodes'
// creates, all or nothing. When their payload exceeds the runner's
// multiBytes, the shares are created first, in multis of at most that,
// and the head's setData goes alone after them; a share that exists
// already is fine there (its name is its content). That needs the head
// node as their parent: with none, write creates it empty (which every
// member reads as no record) and the caller starts again. The one
// multi also falls back to that path when it fails on a share that
// exists: a writer that died after creating it in the split path.
//
// It returns errAgain when the head moved (BadVersion, NodeExists or
// NoNode on the head) or its parent was missing and is created now; a
// *zkError for any other failure.
func (r *Runner) write(enc assignment.Encoded) error {
	conn := r.st.Conn
	head := r.cfg.Paths.Assignment()
	creates := make([]any, len(enc.Create))
	total := r.opBytes(head, enc.HeadData)
	for i, n := range enc.Create {
		p := r.cfg.Paths.Share(n.Name)
		creates[i] = &zk.CreateRequest{Path: p, Data: n.Data, Acl: r.cfg.ACL}
		total += r.opBytes(p, n.Data)
	}
	if total <= r.multiBytes {
		var headOp any = &zk.SetDataRequest{Path: head, Data: enc.HeadData, Version: r.version}
		if !r.present {
			headOp = &zk.CreateRequest{Path: head, Data: enc.HeadData, Acl: r.cfg.ACL}
		}
		i, err := failure(conn.Multi(append([]any{headOp}, creates...)...))
		switch {
		case err == nil:
			return nil
		case i == 0 && isAny(err, zk.ErrBadVersion, zk.ErrNodeExists):
			r.counts.failedCAS.Add(1)
			return errAgain
		case i == 0 && errors.Is(err, zk.ErrNoNode) && !r.present:
			if err := zkpath.Ensure(conn, r.cfg.Paths.Dir(), r.cfg.ACL...); err != nil {
				return zkErr("create the group's node", err)
			}
			return errAgain
		case i == 0 && errors.Is(err, zk.ErrNoNode): // deleted since read
			return errAgain
		case i < 1 || !errors.Is(err, zk.ErrNodeExists):
			return zkErr("write the record", err)
		}
		// A share exists already, and the head is as read: the split path.
	}
	if !r.present {
		if err := zkpath.Ensure(conn, head, r.cfg.ACL...); err != nil {
			return zkErr("create the head", err)
		}
		return errAgain
	}
	for lo := 0; lo < len(creates); {
		hi, size := lo, 0
		for hi < len(creates) && (hi == lo || size+r.opBytes(r.cfg.Paths.Share(enc.Create[hi].Name), enc.Create[hi].Data) <= r.multiBytes) {
			size += r.opBytes(r.cfg.Paths.Share(enc.Create[hi].Name), enc.Create[hi].Data)
			hi++
		}
		if err := r.createAll(creates[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	_, err := conn.Set(head, enc.HeadData, r.version)
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		r.counts.failedCAS.Add(1)
		return errAgain
	case errors.Is(err, zk.ErrNoNode):
		return errAgain
	}
	return zkErr("write the head", err)
}

// createAll creates the share nodes of ops (*zk.CreateRequest) in one
// multi, or, if one exists already, one by one, pipelined, those that
// exist being fine.
func (r *Runner) createAll(ops []any) error {
	conn := r.st.Conn
	_, err := failure(conn.Multi(ops...))
	if err == nil || !errors.Is(err, zk.ErrNodeExists) {
		return zkErr("create share nodes", err)
	}
	errs := make([]error, len(ops))
	inflight.Do(len(ops), func(i int) {
		op := ops[i].(*zk.CreateRequest)
		if _, err := conn.Create(op.Path, op.Data, op.Flags, op.Acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			errs[i] = err
		}
	})
	return zkErr("create share nodes", errors.Join(errs...))
}

// opBytes is about what one create or setData of data at path adds to a
// multi: the path, the data, the ACL and the framing.
func (r *Runner) opBytes(path string, data []byte) int {
	n := len(path) + len(data) + 32
	for _, a := range r.cfg.ACL {
		n += len(a.Scheme) + len(a.ID) + 12
	}
	return n
}

// failure returns the index of the operation of a multi that failed and
// its error, from what Multi returned; the index is -1 when the request
// itself failed (the connection, say). ZooKeeper answers the operations
// after the failed one with a runtime inconsistency, and those before it
// with success.
func failure(res []zk.MultiResponse, err error) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, err
}

// cleanup deletes, once the head h is written, the nodes the head before
// it named and h does not (stale), then the children of the head that
// no record names any more ([assignment.Orphans]). A failure is passed
// to warn, not retried: the next writer's cleanup finds what is left. It
// returns how many nodes it deleted. It runs off the runner's goroutine
// (see [Runner.startAfter]), so it touches nothing of the runner's.
func cleanup(conn zksession.Conn, paths zkpath.Group, h assignment.Head, stale []string, warn warnFunc) int {
	n := deleteAll(conn, paths, stale, warn)
	children, _, err := conn.Children(paths.Assignment())
	if err != nil {
		warn("list the record's nodes", err, "then", "the next writer deletes what is left")
		return n
	}
	return n + deleteAll(conn, paths, assignment.Orphans(h, children), warn)
}

// warnFunc logs a failure: what failed, the error, and slog arguments.
type warnFunc func(op string, err error, args ...any)

// deleteAll deletes the head's children names, in multis of at most
// maxDeletes, or, if one is gone already (another member cleaned up
// too), one by one, pipelined. It returns how many it deleted.
func deleteAll(conn zksession.Conn, paths zkpath.Group, names []string, warn warnFunc) int {
	deleted := 0
	for lo := 0; lo < len(names); lo += maxDeletes {
		chunk := names[lo:min(lo+maxDeletes, len(names))]
		ops := make([]any, len(chunk))
		for i, n := range chunk {
			ops[i] = &zk.DeleteRequest{Path: paths.Share(n), Version: -1}
		}
		_, err := failure(conn.Multi(ops...))
		if err == nil {
			deleted += len(chunk)
			continue
		}
		if !errors.Is(err, zk.ErrNoNode) {
			warn("delete the record's old nodes", err, "then", "the next writer deletes what is left")
			continue
		}
		errs := make([]error, len(chunk))
		inflight.Do(len(chunk), func(i int) {
			errs[i] = conn.Delete(paths.Share(chunk[i]), -1)
		})
		for _, err := range errs {
			switch {
			case err == nil:
				deleted++
			case !errors.Is(err, zk.ErrNoNode):
				warn("delete the record's old nodes", err, "then", "the next writer deletes what is left")
			}
		}
	}
	return deleted
}
