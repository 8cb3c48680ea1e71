package record

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// afterWrite is the work a write leaves to do, which [Runner.startAfter]
// runs in a goroutine of its own so that the Assign that wrote returns
// its share at once: arming the head's watch again, which the write
// itself fired, and deleting the nodes the new head no longer names. A
// writer that gives partitions up releases them that much sooner (two
// or three round trips: about 10 ms at 50 members here), and its next
// job finds the head read and watched.
type afterWrite struct {
	done chan struct{} // closed when the fields below are set
	st   zksession.State

	// The head read with its watch (armHead's results).
	data  []byte
	stat  *zk.Stat
	watch <-chan zk.Event
	err   error

	deleted  int
	warnings []warning
}

// warning is a failure the goroutine met, logged by [Runner.takeAfter]
// on the runner's goroutine (the runner's log of kinds is its own).
type warning struct {
	op   string
	err  error
	args []any
}

// startAfter starts the work the write of head h leaves: the head read
// again with a watch, then the nodes stale, and the head's children no
// record names, deleted. The runner takes its outcome before it next
// reads the head. The runner owns the goroutine, which touches nothing
// of the runner's but a: it ends once its requests are answered, which
// they are at the latest when the connection closes.
func (r *Runner) startAfter(h assignment.Head, stale []string) {
	a := &afterWrite{done: make(chan struct{}), st: r.st}
	r.after, r.watch = a, nil // the write fired the watch
	paths := r.cfg.Paths
	go func() {
		defer close(a.done)
		warn := func(op string, err error, args ...any) {
			a.warnings = append(a.warnings, warning{op: op, err: err, args: args})
		}
		a.data, a.stat, a.watch, a.err = armHead(a.st.Conn, paths.Assignment())
		a.deleted = cleanup(a.st.Conn, paths, h, stale, warn)
	}()
}

// takeAfter waits for the work the last write left, if any, and takes
// its outcome: the head and its watch, unless the connection changed
// since (or the read failed: the head is then read as usual). It returns
// ctx's error if ctx ends first (its requests held while the connection
// is down, say), leaving the outcome for the next call.
func (r *Runner) takeAfter(ctx context.Context) error {
	a := r.after
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.after = nil
	for _, w := range a.warnings {
		r.warn(w.op, w.err, w.args...)
	}
	if a.deleted > 0 {
		r.log.Debug("zkalloc: assignment record: deleted the nodes no head names", "nodes", a.deleted)
	}
	if a.err != nil || r.st.NewConnection(a.st.State) || r.st.Status != a.st.Status {
		return nil
	}
	r.watch, r.reread = a.watch, false
	r.setHead(a.stat, a.data)
	return nil
}
