package partset

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// writer is what [write] needs of the client. It must be safe for
// concurrent use: the reads of a batch are sent from several goroutines.
type writer interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
}

// maxAttempts bounds how often one change is retried because other members
// wrote the same topics first.
const maxAttempts = 50

// maxMultiBytes keeps each multi-operation of several topics well below
// ZooKeeper's 1 MB request limit; a change bigger than that is written in
// several steps. A multi of one topic can be bigger, up to
// [partitions.MaxTopicBytes] and its path.
const maxMultiBytes = 512 << 10

// ErrContended is returned when a change lost the compare-and-set race
// [maxAttempts] times in a row.
var ErrContended = errors.New("partitions: too much contention")

// write adds (or removes) ids, a normalized topic→IDs map, to (from) the
// set in ZooKeeper with compare-and-set on each topic node's version.
// Topics are written in sorted order, in as few multi-operations as the
// size limit allows; each multi is atomic.
//
// A topic emptied by a removal keeps its node, with no data, which
// readers take as a topic with no partitions; write never deletes a topic
// node. A node's version is the only thing a write is conditioned on, and
// a node created again starts at version 0: had the emptied node been
// deleted, a writer that had read it at version v before the delete could
// overwrite the new node once it reached version v (issue 24: W1 reads
// "0" at version 0 to add 7, W2 removes 0 and the node goes, W3 adds 5
// and creates it at version 0, W1's write at version 0 succeeds: 5 lost
// and 0 back). A node that is never deleted has one version history, so a
// version read before a change can never match after it. Only a delete
// from outside (an operator, or a member of a version from before this
// rule) opens that window again.
//
// A change that needs several multis is checked whole before the first
// (see [topicWrite.check]), so that one refused for good, by a topic's
// data or by the limits, is refused before anything is written. What the
// check cannot cover is other members writing between the multis: a later
// topic they make unwritable (corrupt, or too full) still refuses the
// change after the earlier multis were applied.
func write(c writer, paths zkpath.Group, acl []zk.ACL, remove bool, ids map[string][]int32) error {
	if len(acl) == 0 {
		acl = zk.WorldACL(zk.PermAll)
	}
	// A server answers reads from its own copy, which may lag behind the
	// leader: a change planned on a lagging read that finds nothing to do
	// (the IDs to add are there, those to remove are not) writes nothing,
	// and so is not conditioned on anything, while a write it has not
	// seen may have undone that already: an add or a remove that returned
	// OK and never took effect (the chaos test's set writers found it,
	// with a removal that emptied a topic answered in 4 ms, w:1 present
	// after it although its add had returned before the removal began).
	// A sync first makes every read of the change at least as new as the
	// leader's state when the change began, so a topic found with nothing
	// to do had nothing to do at some moment within the change. Topics
	// that are written are conditioned on their versions anyway; a
	// failed compare-and-set is answered after the write that beat it, so
	// the reads of a retry see that write without another sync.
	if _, err := c.Sync(paths.Partitions()); err != nil {
		return fmt.Errorf("sync before reading %s: %w", paths.Partitions(), err)
	}
	w := &topicWrite{c: c, paths: paths, acl: acl, remove: remove, ids: ids}
	topics := slices.Sorted(maps.Keys(ids))
	written := false
	for len(topics) > 0 {
		n, wrote, err := w.batch(topics, !written)
		if err != nil {
			return err
		}
		written = written || wrote
		topics = topics[n:]
	}
	return nil
}

// topicWrite is one change that [write] is writing.
type topicWrite struct {
	c      writer
	paths  zkpath.Group
	acl    []zk.ACL // of the nodes created
	remove bool
	ids    map[string][]int32
	// ahead holds the reads of the topics that follow the last multi,
	// made with it before it was found full, for the next multi.
	ahead []topicRead
}

// batch writes a prefix of topics that fits in one multi-operation and
// returns its length and whether a multi was applied (a prefix that needs
// no change is not written). It reads the topics inflight.Limit at a time,
// with the requests pipelined, starting with those read ahead by the
// previous multi. If check is set (nothing of the change is written yet)
// and the prefix is not all of topics, it checks the rest with
// [topicWrite.check] before it writes; a change that fits one multi costs
// no extra read.
func (w *topicWrite) batch(topics []string, check bool) (int, bool, error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		ahead := w.ahead // still current only for the first attempt
		w.ahead = nil
		if attempt > 0 {
			ahead = nil
		}
		var ops []any
		size, n := 0, 0
		for full := false; n < len(topics) && !full; {
			end := min(n+inflight.Limit, len(topics))
			var reads []topicRead
			if n < len(ahead) {
				end = min(end, len(ahead))
				reads = ahead[n:end]
			} else {
				reads = readTopics(w.c, w.paths, topics[n:end])
			}
			for i, topic := range topics[n:end] {
				op, err := w.plan(reads[i], topic)
				if n > 0 && (size > maxMultiBytes || err == nil && size+opSize(op) > maxMultiBytes) {
					full = true // this topic starts the next batch
					w.ahead = reads[i:]
					break
				}
				if err != nil {
					return 0, false, fmt.Errorf("topic %q: %w", topic, err)
				}
				n++
				if op != nil {
					ops = append(ops, op)
					size += opSize(op)
				}
			}
		}
		if len(ops) == 0 {
			return n, false, nil
		}
		if check && n < len(topics) {
			if err := w.check(topics[n:]); err != nil {
				return 0, false, err
			}
			check = false // the retries below write the same prefix
		}
		_, err := w.c.Multi(ops...)
		switch {
		case err == nil:
			return n, true, nil
		case errors.Is(err, zk.ErrNoNode) && !w.remove:
			// Either a topic vanished (retry) or the parent is missing.
			if err := zkpath.Ensure(w.c, w.paths.Partitions(), w.acl...); err != nil {
				return 0, false, err
			}
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
			// Another member wrote first: read again.
		default:
			return 0, false, fmt.Errorf("write topics %s to %s under %s: %w", topics[0], topics[n-1], w.paths.Partitions(), err)
		}
	}
	return 0, false, ErrContended
}

// check reads and plans every topic of topics, inflight.Limit at a time,
// and returns the first error, naming the topic: a refusal for good (see
// [retryable]) or a failed read. It writes nothing, and keeps none of the
// reads: a change's topics together can be far bigger than one multi.
func (w *topicWrite) check(topics []string) error {
	for len(topics) > 0 {
		chunk := topics[:min(inflight.Limit, len(topics))]
		reads := readTopics(w.c, w.paths, chunk)
		for i, topic := range chunk {
			if _, err := w.plan(reads[i], topic); err != nil {
				return fmt.Errorf("topic %q: %w", topic, err)
			}
		}
		topics = topics[len(chunk):]
	}
	return nil
}

// topicRead is a topic node as [readForWrite] found it.
type topicRead struct {
	data   []byte
	stat   *zk.Stat
	exists bool
	err    error
}

// readTopics reads the topics at once, the requests pipelined.
func readTopics(c writer, paths zkpath.Group, topics []string) []topicRead {
	reads := make([]topicRead, len(topics))
	inflight.Do(len(topics), func(i int) { reads[i] = readForWrite(c, paths.Topic(topics[i])) })
	return reads
}

func readForWrite(c writer, path string) topicRead {
	data, stat, err := c.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return topicRead{}
	}
	return topicRead{data: data, stat: stat, exists: err == nil, err: err}
}

// plan is [planTopic] for one topic of the change.
func (w *topicWrite) plan(r topicRead, topic string) (any, error) {
	return planTopic(r, w.paths.Topic(topic), w.acl, w.remove, w.ids[topic])
}

// planTopic returns the operation that applies the change to a topic node
// as read, or nil if there is nothing to do.
func planTopic(r topicRead, path string, acl []zk.ACL, remove bool, change []int32) (any, error) {
	if r.err != nil {
		return nil, r.err
	}
	cur, err := partitions.DecodeIDs(r.data)
	if err != nil {
		return nil, fmt.Errorf("existing data is corrupt, fix or delete the node: %w", err)
	}
	next := partitions.Union(cur, change)
	if remove {
		next = partitions.Subtract(cur, change)
	}
	if len(next) > partitions.MaxTopicIDs {
		return nil, fmt.Errorf("%w: would hold %d IDs, more than %d", rebalance.ErrInvalid, len(next), partitions.MaxTopicIDs)
	}
	if slices.Equal(cur, next) {
		return nil, nil
	}
	// An emptied topic keeps its node, with no data (see [write]).
	data := partitions.EncodeIDs(next)
	if len(data) > partitions.MaxTopicBytes {
		return nil, fmt.Errorf("%w: would take %d bytes, more than %d: ZooKeeper refuses a write that big (scattered IDs take about one byte per digit plus a comma)",
			rebalance.ErrInvalid, len(data), partitions.MaxTopicBytes)
	}
	if !r.exists {
		return &zk.CreateRequest{Path: path, Data: data, Acl: acl}, nil
	}
	return &zk.SetDataRequest{Path: path, Data: data, Version: r.stat.Version}, nil
}

func opSize(op any) int {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return len(op.Path) + len(op.Data) + 32
	case *zk.SetDataRequest:
		return len(op.Path) + len(op.Data) + 32
	}
	return 0
}

// retryable reports whether a write failed for a passing reason (the
// connection, the session, contention) rather than for good: bad data in
// ZooKeeper or a request the server refuses whatever its state.
func retryable(err error) bool {
	switch {
	case errors.Is(err, rebalance.ErrInvalid), errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed),
		errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrInvalidACL), errors.Is(err, zk.ErrInvalidPath):
		return false
	}
	return true
}
