// Package history records what each member's consumer was told and did,
// and checks the whole history against the allocator's promises.
//
// A test harness wraps every consumer: it calls [Recorder.Received] when the
// consumer takes an Update from the channel, [Recorder.Acked] once the
// consumer has stopped that Update's Revoked partitions, and
// [Recorder.Closed] once the consumer has stopped everything (when its loop
// ends after a graceful close, or when the harness kills the process). A
// graceful close is announced by [Recorder.Closing] just before the
// allocator's Close, while the consumer goes on taking Updates. Injected
// faults go to [Recorder.Fault], and the partition set the group should
// own to [Recorder.Expect], before members start and after each change.
// [Check] then sweeps the [History] in time order and reports:
//
//   - (a) double ownership: no partition is held by two members at one
//     instant, where a revoked partition is still held by its old owner
//     until that owner acknowledges the revoking Update or a later one;
//   - (b) recovery: after the faults end, every expected partition is owned
//     again (in some member's last received Assigned) within a deadline,
//     with the longest unowned gap of each partition;
//   - (c) convergence: the live members end on one Generation and one
//     member list, and their Assigned split the expected set exactly;
//   - (d) no lost set writes: every read of the partition set
//     ([Recorder.SetRead]) shows what some linearizable order of the
//     writes ([Recorder.SetWrite]) leaves, partition by partition (see
//     checkSetWrites);
//   - (e) prompt revocation after a pause: a member whose process was
//     stopped past its lease ([Recorder.Paused]) revokes everything
//     within [Options.ResumeBound] of running again.
//
// The report also times, for each fault, how long after its end the group
// was first converged at an instant (see [Recovery]).
//
// # Ownership model
//
// A member holds a partition from the instant it receives an Update that
// assigns it. Acknowledging Update k tells that the consumer has stopped
// every partition not assigned by k or by any Update it received after k,
// so from then on the member holds exactly the union of the Assigned of
// Updates k, k+1, … up to the newest it received. Before its first
// acknowledgement it holds the union of everything it has received.
// Acknowledging an Update older than one already acknowledged changes
// nothing, and so does acknowledging an Update of an earlier incarnation.
// Closed releases everything; receiving again under the same name starts
// a new incarnation. Closing (a graceful close) releases nothing by
// itself: the closing member holds its partitions until its consumer
// acknowledges an Update that assigns nothing, Close's final Update (the
// rule above then releases everything), or until Closed. So another member
// taking a partition over before that final Ack is a double ownership. A
// closing member no longer counts for convergence.
//
// A member owns a partition, for (b) and (c), while its newest received
// Update assigns it: revoked-but-unacknowledged partitions are held but
// not owned.
//
// A member stopped past its session's end (a [Pause] that Expired) is the
// one exception to (a): ZooKeeper ends its session while it cannot act,
// another member rightly takes over, and the stopped member's consumer
// may go on with the partition for a moment once resumed. Such an
// overlap is excused, and listed apart, if the other member took the
// partition over after the stop, the overlap ended within
// [Options.ResumeBound] of the resume, and the other member's fencing
// token is larger (events recorded with [Recorder.Record] carry the
// tokens): a sink that refuses lower tokens refuses the stopped member's
// writes.
//
// # Expected set
//
// The expected set in force at an instant is the one of the latest
// [KindExpected] event, the first such event's before it, or
// [Options.Expected] throughout if there are none. Convergence at an
// instant, and so recovery times, are judged against it, and so are gaps:
// a partition counts as unowned only while expected. A partition added to
// the set may take a moment to get its first owner, and one removed may
// take a moment to be released; neither is a violation unless the wait
// breaks (b) or the removed partition is still assigned at the end.
//
// [Check] is a pure function of a [History] value; [Recorder] is the only
// part that needs a lock. Neither starts goroutines.
package history
