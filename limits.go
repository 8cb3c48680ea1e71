package zkalloc

import (
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
)

// Bounds on what a group holds and what its members read from ZooKeeper,
// so that nodes written by another client cannot make a member allocate
// without bound or read a reply its client refuses. Each refusal is an
// error, or an error log, that names the limit.
const (
	// MaxPartitions bounds the partitions of a group, all topics
	// together; see [partitions.MaxPartitions]. AddPartitions and the seed
	// are refused past it; a set read past it takes topics in name order
	// while they fit and leaves out the others.
	MaxPartitions = partitions.MaxPartitions
	// MaxTopicsBytes bounds the names of a group's topics, 4 bytes added
	// to each; see [partitions.MaxTopicsBytes]. Enforced when adding and
	// when reading, like MaxPartitions.
	MaxTopicsBytes = partitions.MaxTopicsBytes
	// MaxMembers and MaxMembersBytes bound the member list as read; see
	// [membership.MaxMembers]. A list past them is refused (logged as an
	// error, the last assignment kept until it changes), and Start fails
	// with [ErrGroupFull] to join such a group.
	MaxMembers      = membership.MaxMembers
	MaxMembersBytes = membership.MaxMembersBytes
)

// ErrGroupFull is wrapped by Start's error when the group's member list is
// at [MaxMembers] or [MaxMembersBytes] already.
var ErrGroupFull = membership.ErrGroupFull
