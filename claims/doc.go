// Package claims is one of zkalloc's internals: users never import it.
//
// Its [Claims] actor holds this member's ownership claims, the ephemeral
// nodes <root>/groups/<group>/owners/<topic>:<id>, in line with the
// latest [Desired] set the member actor wants, and reports what it
// holds as [Held]. A partition moves between members only through these
// claims: the new owner can create one only once the old owner has
// deleted it, or its session has ended, so no partition has two owners.
// Like the membership and partitions actors, it is driven by the session
// state and retries failed ZooKeeper work until it succeeds.
package claims
