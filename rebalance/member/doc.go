// Package member makes one member's decisions and hands its partitions
// over. It is one of zkalloc's internals: users never import it, and its
// API may change in any release.
//
// [Core] is the pure state machine, after etcd raft's RawNode: no
// goroutines, no clock, no ZooKeeper. Events go in (the session state,
// member and partition views, the claims held, the consumer's acks and
// deliveries, the answer to a strategy run, and ticks carrying the time);
// [Core.Ready] says what to do: an [Update] to publish, the claims to
// hold, a strategy to run, when to tick next, and what to log. Debounce,
// hand-off (with its release bounds, from the consumer's receipt of a
// revocation), the grace period, keeping partitions through a blip (only
// those the claims report still holds), claims deleted from outside
// (vanished.go), the drain on Close, and when to report claims another
// member keeps too long all live there, and its tests feed it events and
// look at what it asks, with no goroutine and no timer.
//
// The thin loop around it is package zkalloc's: it takes the inputs from
// the other actors, runs the strategy the core asks for, keeps one timer
// for the core's wake-ups, passes the wanted claims and the stuck reports
// to the claims actor and delivers Updates latest-wins.
package member
