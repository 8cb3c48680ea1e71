package partset

import (
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/partitions"
)

// Conn is what [Change] and [Read] need of a ZooKeeper client; a *zk.Conn
// has it. It must be safe for concurrent use.
type Conn interface {
	writer
	Children(path string) ([]string, *zk.Stat, error)
}

// Change adds (or, with remove, takes out) topics in the group's shared
// set directly, with no [Set] actor: for tools such as the zkalloc
// command. It validates as [Set.Add] does ([partitions.Normalize], the
// limits on the set's topic names) and writes with the same
// compare-and-set merge, so that running members see it as any member's
// change. Adding creates the group's nodes when missing.
func Change(c Conn, paths zkpath.Group, remove bool, topics map[string][]int32) error {
	norm, err := partitions.Normalize(topics)
	if err != nil || len(norm) == 0 {
		return err
	}
	if !remove {
		if err := zkpath.Ensure(c, paths.Partitions()); err != nil {
			return err
		}
		names, _, err := c.Children(paths.Partitions())
		if err != nil {
			return err
		}
		has := func(topic string) bool { return slices.Contains(names, topic) }
		if err := checkTopicsBytes(slices.Values(names), has, norm); err != nil {
			return err
		}
		if err := checkTotal(c, paths, norm); err != nil {
			return err
		}
	}
	return write(c, paths, nil, remove, norm)
}

// checkTotal refuses to add ids, a normalized change, if the set would
// then hold more than [partitions.MaxPartitions], counting the set as
// [Read] gives it (as a member does: topics past the limit are left out
// of it).
func checkTotal(c Conn, paths zkpath.Group, ids map[string][]int32) error {
	topics, _, err := Read(c, paths)
	if err != nil {
		return err
	}
	total := 0
	for _, have := range topics {
		total += len(have)
	}
	for topic, add := range ids {
		total += unionLen(topics[topic], add) - len(topics[topic])
	}
	return errPastTotal(total)
}

// Read returns the group's shared set as it is in ZooKeeper: each topic's
// IDs, sorted, and the topics whose node holds no valid IDs (corrupt,
// which members leave unassigned). A topic whose node is empty (every ID
// removed: see [write]) has no partitions and is not in topics. It
// returns an error wrapping zk.ErrNoNode if the group has no partition
// set.
func Read(c Conn, paths zkpath.Group) (topics map[string][]int32, corrupt []partitions.TopicError, err error) {
	names, _, err := c.Children(paths.Partitions())
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(names)
	get := func(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
		data, stat, err := c.Get(p)
		return data, stat, nil, err
	}
	out := fetchTopics(get, paths, names)
	// Decoded within MaxPartitions, in name order, as a member does.
	topics = make(map[string][]int32, len(names))
	used := 0
	for i, r := range out {
		switch {
		case errors.Is(r.err, zk.ErrNoNode): // deleted since listed
		case r.err != nil:
			return nil, nil, r.err
		case r.bad != nil:
			corrupt = append(corrupt, partitions.TopicError{Topic: names[i], Err: r.bad})
		case used+r.count > partitions.MaxPartitions:
			corrupt = append(corrupt, partitions.TopicError{Topic: names[i], Err: errPastMaxPartitions(r.count)})
		case r.count == 0: // emptied: no partitions
		default:
			used += r.count
			topics[names[i]], _ = partitions.DecodeIDs(r.data) // counted: valid
		}
		out[i].data = nil
	}
	return topics, corrupt, nil
}
