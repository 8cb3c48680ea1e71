package partitions

import "iter"

// MaxTopicsBytes bounds the names of a set's topics: their lengths plus 4
// bytes each (how ZooKeeper sends a name) add up to at most this. Every
// member reads the list of topics in one reply, and a client refuses a
// reply bigger than its buffer (1 MiB here and for ZooKeeper's own
// clients): past it, no member could read the set. Half of that leaves
// room for two members that add topics at the same moment, each checking
// against what it has read. It allows about 1,970 topics of the longest
// names, or 25,000 of 16 bytes.
const MaxTopicsBytes = 500_000

// MaxPartitions bounds the partitions of a set, all topics together: 2^20
// (1,048,576), as many as one topic may hold ([MaxTopicIDs]). The scale
// tests run a group of 1,001,000 partitions; a view of this many takes
// about 25 MB, and each member keeps a few. Without it, topics written by
// another client (2,000 topics of a million IDs, a few bytes each) would
// make every member allocate gigabytes. An addition that would take the
// set past it is refused; a set read past it (members adding at the same
// moment, or a foreign writer) is cut in name order: each topic is taken
// if its partitions fit in what the topics before it left, and the others
// are reported in [View.Corrupt] with an error naming the limit, their IDs
// never decoded.
const MaxPartitions = 1 << 20

// TopicsBytes is what [MaxTopicsBytes] bounds for the given topic names:
// the sum of their [ListedBytes].
func TopicsBytes(names iter.Seq[string]) int {
	n := 0
	for name := range names {
		n += ListedBytes(name)
	}
	return n
}

// ListedBytes is what one name takes in ZooKeeper's list of children: its
// length and the 4 bytes that carry it.
func ListedBytes(name string) int { return len(name) + 4 }
