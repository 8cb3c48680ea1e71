package zkalloc

import (
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Partition names one partition of one topic: Topic, its topic's name, and
// ID, the partition's number in it. It is [rebalance.Partition]: that
// package has its [rebalance.Compare] order (by topic, then numerically
// by ID), [rebalance.Parse] and String ("topic:id").
type Partition = rebalance.Partition

// Update is one snapshot of this member's assignment, as its consumer
// receives it from [Allocator.Updates]: the generation it was computed
// for, the live members, what is Assigned, Added, Revoked and Pending,
// and why; Ack hands the revoked partitions on, and Token gives a
// partition's fencing token. It is a value: nothing in it changes after
// it is published, and its slices must not be modified. It is defined
// with the member's decisions, which make it, and its fields and methods
// are documented there: go doc
// github.com/zkalloc/zkalloc/internal/decision Update.
type Update = decision.Update
