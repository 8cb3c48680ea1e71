// Package partset keeps the group's shared partition set in ZooKeeper,
// and publishes it as [partitions.View]s.
//
// The set is stored as one persistent znode per topic,
// <root>/groups/<group>/partitions/<topic>, whose data lists the topic's
// IDs as compact ranges ("0-63,70", see [partitions.EncodeIDs]); a
// million partitions fit without any znode nearing ZooKeeper's 1 MB limit
// (every other ID of 100,000 takes 294 KB; a change that would take a
// topic past [partitions.MaxTopicBytes] is refused with
// [rebalance.ErrInvalid], and so is one that would make the list of topic
// names longer than [partitions.MaxTopicsBytes]). Writes are
// compare-and-set on the znode versions, in one multi-operation per
// change, retried when another member wrote first. A topic node is never
// deleted: a removal that empties a topic leaves its node with no data,
// which every reader takes as a topic with no partitions (not a corrupt
// one). So a node keeps one version history, and a write planned on a
// version read before another member's change always fails its
// compare-and-set; a node deleted and created again would start at
// version 0 once more, and a stale write could land on it (see write).
//
// The [Set] actor merges this member's seed into the set once, applies
// [Set.Add] and [Set.Remove] requests, watches the topic nodes and
// publishes sorted views tagged with the zxid of the newest change they
// contain. A view is published only once a reading holds still (no
// watch armed by it has fired by the time its last reply is in; topics
// that changed meanwhile are read again), so it is the set as it was at
// its zxid: a multi that wrote several topics is in it whole or not at
// all, whoever wrote it. A topic whose data is corrupt is logged and reported in the
// view and left out of it; the other topics are unaffected. [Change] and
// [Read] do the same writes and reads without an actor, for the zkalloc
// command.
package partset
