// Package claims holds this member's ownership claims in ZooKeeper.
//
// Its [Actor] holds the claims, the ephemeral nodes
// <root>/groups/<group>/owners/<topic>:<id>, with their hold records, the
// persistent nodes <root>/groups/<group>/holds/<topic>:<id> that name the
// holding session, in line with the latest [decision.Want] the member's
// core sends, and reports what it holds as [decision.Held]. A partition
// moves between members only through these: the new owner takes one only
// once the old owner has released it (deleted its claim and record
// together), or the old owner's session has ended, so no partition has
// two owners, even if someone deletes a claim. A claim of this member
// deleted from outside is reported in [decision.Held].Vanished, for the
// member to revoke. Like the members and partset actors, it is driven by
// the session state and retries failed ZooKeeper work until it succeeds.
// It times the wanted claims other sessions hold, and warns once for
// each holding session of those held for longer than a hand-off can
// take, with who holds them and what to do (stuck.go).
//
// docs/claims.md describes the nodes, the rules and their cost.
package claims
