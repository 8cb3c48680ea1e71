// Package assignment is the codec of a group's agreed assignment record
// in ZooKeeper, the state [rebalance.Sticky] carries from one assignment
// to the next (issue 27). It is pure: it turns a [rebalance.Placement],
// with the members and the views it was computed for, into the data of
// the record's nodes ([Encode]), and reads them back ([DecodeHead],
// [DecodeShare], [Decode]); the actor that reads and writes them is
// elsewhere. It imports only the standard library and rebalance.
//
// The record is a head node and one share node per member that owns
// partitions:
//
//	<root>/groups/<group>/assignment          persistent; the Head: format, generation, the views' zxids,
//	                                          and per member its weight, drained flag, share node, hash, count
//	<root>/groups/<group>/assignment/<g>-<i>  persistent, never written over; one member's share:
//	                                          the partitions it owns, as "o <topic> 0-63,70,100-9100/1000",
//	                                          and their homes, as "h <topic> <ids> <home>"
//
// A writer creates the new share nodes ([Encoded].Create), then sets the
// head with a compare-and-set on the head's version, then deletes
// [Encoded].Stale; [Orphans] names what a failed writer left. A member
// reads the head and its own share node ([Head.Of], [DecodeShare]); the
// member computing the next record reads every share ([Decode]).
// docs/sticky.md gives the layout's reasons and costs.
//
// Malformed data is an error wrapping [ErrInvalid] (which is
// [rebalance.ErrInvalid]); every function is safe for concurrent use.
package assignment
