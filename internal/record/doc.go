// Package record is the sticky strategy's runner: it reads and writes
// the group's agreed assignment record (package assignment's codec) in
// ZooKeeper, so that every member computes its share from the same
// previous placement (docs/sticky.md).
//
// A [Runner] serves the shell's jobs one at a time ([Runner.Assign], the
// shape of seam.Assigner). For a job, it reads the record's head; if the
// head was computed for the job's member and partition views (their
// zxids), it returns this member's share from its share node; if the
// head is newer, this member's views are behind, and it waits for the
// head to change or the job to be cancelled; if the head is older, or
// there is none, the next record is due: the member that wrote the head
// computes it at once, the others each after their rank among the live
// members times [Config].Step, so that usually one member writes and a
// dead or slow one is replaced a step later. The writer decodes the
// previous record, runs [rebalance.Sticky] on it, and writes the result
// with a compare-and-set on the head; losing it to another writer, it
// reads the head again. Which member writes does not matter: every member
// computing from the same record and views computes the same record.
//
// What decides is the pure function decide (decide.go); the Runner
// reads, decides and acts (read.go, compute.go, write.go), and keeps
// between calls the head read with its watch, the share nodes' data
// by name (they never change), and the placement last decoded or
// written. The Runner starts no goroutine; its I/O is done on the calling
// goroutine, pipelined where there are many reads (internal/inflight).
//
// The first record over a group that ran rebalance.Balanced starts from
// Balanced's assignment of the same views, so that it moves nothing more
// than the minimum from where the group is.
package record
