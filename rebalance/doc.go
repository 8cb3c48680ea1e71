// Package rebalance is the ground floor of zkalloc: the [Partition] a
// group splits, with its order ([Compare], [Sort]), its text form
// ([Partition.String], [Parse]) and the rules on names ([ValidateName],
// [ValidateTopic], [MaxNameLen]); and the strategies that split
// partitions among the members of a group: the [Strategy] interface, the
// built-in [RoundRobin], [Range] and [Balanced], and [Compute], which runs
// a strategy and checks its answer; and [Sticky], which, unlike the
// strategies, starts from the previous [Placement] and moves only the
// partitions that must move, with weights and drained members ([Member],
// [Shares]). [StickyStrategy], zkalloc's default, names the sticky
// assignment that members agree on through a record in ZooKeeper. It imports only the standard library, so a strategy written
// against it pulls in nothing else.
//
// Strategies are pure and deterministic: every member runs the same one
// on the same sorted members and partitions and takes its own share, so
// all members must agree on it.
//
// Users import this package to choose a strategy or write one
// (zkalloc's Config.Strategy); zkalloc.Partition is this package's
// [Partition].
package rebalance
