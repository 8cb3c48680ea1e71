// Package zkalloc splits a shared set of partitions among the members of a
// consumer group through Apache ZooKeeper, with no leader and no
// broker-side coordinator.
//
// Each member registers an ephemeral node in its group, watches the member
// list and the group's shared partition set, and whenever either settles
// takes its share of the assignment for them. By default
// ([rebalance.StickyStrategy]) the members agree on the assignment
// through a record in ZooKeeper: the next one is computed from the stored
// one, deterministically, so that only the partitions that must move
// move, with weights (Config.Weight) and drained members; any member may
// write it, with a compare-and-set. A stateless [rebalance.Strategy]
// (Balanced, RoundRobin, Range, or one of yours) is run by each member on
// the sorted members and partitions instead. The consumer reads its share
// from [Allocator.Updates]:
//
//	alloc, err := zkalloc.New(zkalloc.Config{
//		Servers:    []string{"127.0.0.1:2181"},
//		Group:      "billing",
//		Member:     "billing-7f9c",
//		Partitions: map[string][]int32{"events": {0, 1, 2, 3}},
//	})
//	if err != nil { ... }
//	if err := alloc.Start(ctx); err != nil { ... }
//	go func() {
//		<-sigterm
//		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
//		defer cancel()
//		alloc.Shutdown(ctx) // the loop below takes the final Update
//	}()
//	for u := range alloc.Updates() {
//		stop(u.Revoked) // and wait until they have stopped
//		u.Ack()         // lets the next owners take them
//		start(u.Added)
//	}
//	stopAll() // Updates is closed: after Shutdown, or on a fatal error
//	if err := alloc.Close(); err != nil { // Shutdown's result, or the fatal error
//		log.Printf("zkalloc: %v", err)
//	}
//
// [Allocator.Shutdown] hands over: it publishes a final Update revoking
// everything ([RevokeShutdown]) and waits for its Ack before leaving, so
// call it while the consumer still reads Updates; when its ctx ends it
// stops waiting and leaves at once. [Allocator.Close] is Shutdown bounded
// by Config.ReleaseTimeout, and a second call returns the first's
// result. [Update].Cause says why Revoked was revoked: a hand-off or a
// shutdown keeps the others off the partitions until the Ack; a lost
// session ([RevokeLost]) may not.
//
// Users import this package, and package rebalance to choose or write a
// [rebalance.Strategy] (a [Partition] is rebalance's). Packages session,
// membership and partitions name what the allocator's decisions are made
// of (session states, member and partition views, the topic nodes'
// codec and limits), for tools and tests; package actor is the small
// runtime the actors are built on. The rest is internal: each concern is
// an actor (internal/zksession owns the ZooKeeper connection,
// internal/members the member node and list, internal/partset the shared
// set, internal/claims the ownership claims), and the member's decisions
// (debounce, hand-off, DisconnectGrace, the drain on Close) are a pure
// state machine, internal/decision's Core, fed by a thin loop in this
// package that runs the strategy off the loop and publishes the Updates.
// docs/architecture.md draws the layers.
//
// # ZooKeeper layout
//
//	<root>/groups/<group>/members/<member>      ephemeral; small JSON about the process
//	<root>/groups/<group>/partitions/<topic>    persistent; compact id ranges such as "0-63,70"
//	<root>/groups/<group>/owners/<topic>:<id>   ephemeral; the owner's member name (hand-off claims)
//	<root>/groups/<group>/holds/<topic>:<id>    persistent; "0x<session> <member>", the claim's hold record
//	<root>/groups/<group>/seats/<member>        persistent, with Config.DepartureDelay; the member's name
//
// # Guarantees
//
// A partition is never in two members' Update.Assigned at the same time: a
// member lists a partition only once it holds the partition's claim, and
// the old owner gives the claim up only after its consumer has acked the
// Update that revoked it (or after Config.ReleaseTimeout). Partitions that
// do not move are never interrupted. Members that see the same member list
// and partition set compute the same assignment and report the same
// [Update.Generation]. A member that loses its connection to ZooKeeper
// revokes all its partitions (at once, or after Config.DisconnectGrace),
// always before its session can expire; after an expiry it joins again
// with a new session and reclaims. A member configured with another
// strategy than its group's is refused at Start ([ErrStrategyMismatch]).
// With Config.DepartureDelay, a member that leaves keeps its seat for
// that long: its partitions wait for it, nobody else's move, and all
// members switch at the one ZooKeeper event that ends the seat.
// Updates are latest-wins snapshots: a slow consumer never holds up the
// allocator and never misses a revocation.
package zkalloc
