package membership

import (
	"errors"
	"math"
)

// ErrDuplicateMember is the error of a member that finds its node held
// by a live session that is not one of its own: another process uses the
// name.
var ErrDuplicateMember = errors.New("membership: member name is in use by another live session")

// ErrStrategyMismatch is the error of a member that, before it first
// registers, finds a live member of the group whose node names another
// strategy than its own [Info.Strategy].
var ErrStrategyMismatch = errors.New("membership: the group's members run another strategy")

// Bounds on the member list as read. Every member reads the whole list in
// one reply, which the client refuses past its buffer (1 MiB), and hands
// it to the strategy. A list past either bound is refused as a whole:
// logged as an error naming the bound, no view published, read again when
// it changes; and a member does not join a group whose list is past them
// (ErrGroupFull).
const (
	// MaxMembers is the most children of members/ read: ten times the
	// thousand members the scale test runs.
	MaxMembers = 10_000
	// MaxMembersBytes bounds the children's names, each counted with the
	// 4 bytes of its length as ZooKeeper sends it: under the client's
	// 1 MiB buffer with room for the reply's header. Names of members are
	// at most 249 bytes (rebalance.MaxNameLen), so 3,950 members of the
	// longest names fit, and MaxMembers of names up to 96 bytes.
	MaxMembersBytes = 1_000_000
)

// ErrGroupFull is the error of a member that, before it first registers,
// finds the member list at or past [MaxMembers] or [MaxMembersBytes].
var ErrGroupFull = errors.New("membership: the group's member list is full")

// containerOwner is the ephemeral owner ZooKeeper gives a container node,
// which no session has.
const containerOwner = math.MinInt64

// IsMember reports whether a child of members/ whose Stat has this
// EphemeralOwner is a member: an ephemeral node, which the server deletes
// when its session ends, so that it stands for a live session. A persistent or container
// node left there by hand or by another program is not one, however long
// it stays. (A TTL node, which a server may allow, is deleted by the
// server once it is old and childless.)
func IsMember(ephemeralOwner int64) bool {
	return ephemeralOwner != 0 && ephemeralOwner != containerOwner
}
