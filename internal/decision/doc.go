// Package decision is the member's decision core: it decides, for one
// member, what its consumer is assigned, which ownership claims to hold,
// and when a partition may go to its next owner. It imports only the
// standard library, package rebalance (the partitions and strategies)
// and the vocabulary faces session, membership and partitions: no
// actor, no ZooKeeper.
//
// [Core] is the pure state machine, after etcd raft's RawNode: no
// goroutines, no clock, no I/O. It is fed by verbs that say what
// happened: [Core.SessionChanged], [Core.MembersRead],
// [Core.PartitionsRead], [Core.ClaimsHeld], [Core.Acked],
// [Core.Delivered], [Core.Computed], [Core.Close], [Core.GiveUp] (the
// shutdown stops waiting for the ack), and [Core.Tick] with the time. [Core.Ready] says what to do: an [Update] to publish, the
// claims to hold ([Want]), a strategy to run ([Job]), when to tick next,
// seats to expire, and what to log.
// Debounce, hand-off (with its release bounds, from the consumer's
// receipt of a revocation), DisconnectGrace, keeping partitions through a
// blip (only those the claims report still holds), claims deleted from
// outside (vanished.go), the seats of DepartureDelay (seats.go) and the
// drain on Close (drain.go) all live here, and its tests feed it events
// and look at what it asks, with no goroutine and no timer. (When a
// wanted claim another member keeps has been held too long is the claims
// actor's to tell: it waits for the claim; [LongestHandoff] gives it the
// bound.)
//
// The package also defines what the core exchanges with the rest: the
// one [Update] (zkalloc.Update is an alias of it) with the
// [RevokeCause] of its revocations (cause.go), the [Acks] cell its Ack
// reports to, the claims wanted and held ([Want], [Held]), and the
// [Counters] the allocator's Stats are built from.
//
// The thin loop around the core is package zkalloc's (shell.go): it
// takes the inputs from the actors, runs the strategy the core asks for
// off its loop, keeps one timer for the core's wake-ups, passes the
// wanted claims to the claims actor and delivers Updates latest-wins.
package decision
