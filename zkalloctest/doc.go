// Package zkalloctest runs a zkalloc consumer group in memory, for the
// tests of code that consumes a [zkalloc.Allocator]'s Updates: no
// ZooKeeper, no network, and failures on demand.
//
// A [Group] keeps in memory what ZooKeeper keeps for a real group (the
// member list, the seats, the shared partition set and the ownership
// claims), and each [Member] is a real *zkalloc.Allocator that keeps its
// group there: its session, members, partitions and claims actors are
// in-memory ones, and everything else is the Allocator's own (its
// decisions and hand-off, the drain on Close and Shutdown, DepartureDelay, Stats, the
// stop on a fatal error). So the consumer gets the same Updates, with
// the same Pending until the previous owner's consumer acks. A Member
// has the methods a consumer uses on an Allocator, so code written
// against a small interface such as
//
//	type Source interface {
//		Updates() <-chan zkalloc.Update
//		Close() error
//	}
//
// takes either. Its other methods are the test's: [Member.Crash],
// [Member.LoseSession] and [Member.RegainSession], [Member.Disconnect] and
// [Member.Reconnect] fail it as a real member fails, and [Member.Fail]
// stops it on a fatal error; [Member.Acked], [Member.WaitAcked] and
// [Member.Received] show what its consumer did; [Group.WaitConverged]
// waits until every consumer has caught up, and [Group.Owners] shows who
// holds each partition.
//
// What it does not test: ZooKeeper itself, the session's timing (a lost
// session is lost at once, when the test says so), and the strategy
// mismatch check at start.
package zkalloctest
