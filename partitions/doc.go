// Package partitions defines the [Partition] type and keeps the group's
// shared partition set in ZooKeeper. It is one of zkalloc's internals:
// users name partitions as zkalloc.Partition and never import it.
//
// The set is stored as one persistent znode per topic,
// <root>/groups/<group>/partitions/<topic>, whose data lists the topic's
// IDs as compact ranges ("0-63,70", see [EncodeIDs]); a million partitions
// fit without any znode nearing ZooKeeper's 1 MB limit (every other ID of
// 100,000 takes 294 KB; a change that would take a topic past
// [MaxTopicBytes] is refused with [ErrInvalid], and so is one that would
// make the list of topic names longer than [MaxTopicsBytes]). Writes are
// compare-and-set on the znode versions, in one multi-operation per
// change, retried when another member wrote first.
//
// The [Set] actor merges this member's seed into the set once, applies
// [Set.Add] and [Set.Remove] requests, watches the topic nodes and
// publishes sorted views tagged with the zxid of the newest change they
// contain. A topic whose data is corrupt is logged and reported in the
// view and left out of it; the other topics are unaffected.
package partitions
