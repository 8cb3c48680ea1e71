// Package rebalance decides and hands over this member's share of the
// partitions.
//
// Its pure core is the [Strategy] interface with the built-in strategies
// [RoundRobin], [Range] and [Balanced], and [Compute], which runs a
// strategy and validates its answer; none of them has goroutines, a clock
// or ZooKeeper in it.
//
// Around that core sits the [Actor]. It collects the session state and
// the member and partition views, debounces them, computes this member's
// target and publishes [Update]s, running the hand-off: a partition is
// listed only once its claim is held, and a revoked partition's claim is
// kept until the consumer's [Update.Ack] (or a release timeout). The
// claims themselves are held by the claims package's actor, which it
// tells what it wants ([claims.Desired]) and hears what is held
// ([claims.Held]) from.
package rebalance
