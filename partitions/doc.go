// Package partitions is the vocabulary of a group's shared partition
// set: the [View] a member reads of it, how a topic's node stores its
// IDs ([EncodeIDs], [DecodeIDs]: compact ranges such as "0-63,70"), how a
// set's input is checked ([Normalize], [NormalizeIDs], [Union],
// [Subtract]), and the bounds a set is kept and read within
// ([MaxPartitions], [MaxTopicsBytes], [MaxTopicIDs], [MaxTopicBytes]).
// Malformed input is an error wrapping [rebalance.ErrInvalid].
//
// The allocator assigns the partitions of views like these; tools that
// read or write a group's set in ZooKeeper use the same codec and limits.
// The package imports only the standard library and package rebalance,
// where [rebalance.Partition] is defined; the actor that keeps the set
// in ZooKeeper is internal.
//
// The set is stored as one persistent znode per topic,
// <root>/groups/<group>/partitions/<topic>, whose data is its IDs in
// the form of [EncodeIDs].
package partitions
