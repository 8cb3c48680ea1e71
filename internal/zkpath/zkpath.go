// Package zkpath names the znodes of a group, in one place:
//
//	<root>/groups/<group>/members/<member>       ephemeral
//	<root>/groups/<group>/partitions/<topic>     persistent, compact id ranges
//	<root>/groups/<group>/owners/<topic>:<id>    ephemeral, hand-off claims
//	<root>/groups/<group>/holds/<topic>:<id>     persistent, the session holding each claim
//	<root>/groups/<group>/seats/<member>         persistent, with DepartureDelay (listed by every sticky member)
//	<root>/groups/<group>/drained/<member>       persistent, a drain mark (zkalloc drain)
//	<root>/groups/<group>/assignment             persistent, the sticky record's head
//	<root>/groups/<group>/assignment/<g>-<sum>   persistent, never written over: one member's share
package zkpath

import (
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// Group holds the paths of one group under one root.
type Group struct {
	Root  string // e.g. /zkalloc
	Group string
}

// Dir is <root>/groups/<group>.
func (g Group) Dir() string { return g.Root + "/groups/" + g.Group }

// Members is the parent of the member nodes.
func (g Group) Members() string { return g.Dir() + "/members" }

// Member is one member's node.
func (g Group) Member(name string) string { return g.Members() + "/" + name }

// Seats is the parent of the seat nodes (DepartureDelay).
func (g Group) Seats() string { return g.Dir() + "/seats" }

// Seat is one member's seat node.
func (g Group) Seat(name string) string { return g.Seats() + "/" + name }

// Partitions is the parent of the topic nodes.
func (g Group) Partitions() string { return g.Dir() + "/partitions" }

// Topic is one topic's node.
func (g Group) Topic(topic string) string { return g.Partitions() + "/" + topic }

// Owners is the parent of the claims.
func (g Group) Owners() string { return g.Dir() + "/owners" }

// Holds is the parent of the hold records: persistent nodes
// <holds>/<topic>:<id> naming the session that holds each partition's
// claim, kept until that session releases the partition or ends (see
// package claims).
func (g Group) Holds() string { return g.Dir() + "/holds" }

// Drained is the parent of the drain marks: persistent nodes
// <drained>/<member> that `zkalloc drain` creates and `zkalloc undrain`
// deletes. A drained member gets no share of the sticky assignment; the
// mark outlives the member's sessions.
func (g Group) Drained() string { return g.Dir() + "/drained" }

// DrainedMember is one member's drain mark.
func (g Group) DrainedMember(name string) string { return g.Drained() + "/" + name }

// Assignment is the agreed assignment record's head; its children are
// the members' share nodes (package assignment).
func (g Group) Assignment() string { return g.Dir() + "/assignment" }

// Share is one share node of the record.
func (g Group) Share(node string) string { return g.Assignment() + "/" + node }

// Creator is the one client call [Ensure] needs.
type Creator interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
}

// Ensure creates p and every missing ancestor as persistent empty nodes
// with the given ACL (world-all if none). Nodes that exist already are
// fine, whatever their ACL. It tries p first, so the common case costs one
// request.
func Ensure(c Creator, p string, acl ...zk.ACL) error {
	if len(acl) == 0 {
		acl = zk.WorldACL(zk.PermAll)
	}
	p = path.Clean(p)
	if p == "/" || p == "." {
		return nil
	}
	_, err := c.Create(p, nil, 0, acl)
	if errors.Is(err, zk.ErrNoNode) {
		if err := Ensure(c, path.Dir(p), acl...); err != nil {
			return err
		}
		_, err = c.Create(p, nil, 0, acl)
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}
