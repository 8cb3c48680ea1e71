// Package rebalance holds the strategies that split partitions among the
// members of a group: the [Strategy] interface, the built-in [RoundRobin],
// [Range] and [Balanced], and [Compute], which runs a strategy and checks
// its answer. Strategies are pure and deterministic: every member runs the
// same one on the same sorted members and partitions and takes its own
// share, so all members must agree on it.
//
// Users import this package only to choose a strategy or write one
// (zkalloc's Config.Strategy); the member's decisions and hand-off live in
// the library's internals.
package rebalance
