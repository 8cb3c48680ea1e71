// Package members keeps this member registered in its group and
// publishes the group's member list as [membership.View]s.
//
// For every new ZooKeeper session the [Actor] creates the member's
// ephemeral node <root>/groups/<group>/members/<member>. A node of the
// same name left by one of this actor's own earlier sessions is replaced.
// Before the first registration, one held by another live session is
// most likely a crashed earlier run of this member, restarted before its
// session expired: the actor logs the holder once, watches its node, and
// registers as soon as the server deletes it ([Actor.Waiting] says
// meanwhile who holds it; the caller's ctx bounds the wait). After the
// first registration, a name held by another session means another
// process took it while ours was away, and Run fails with
// [membership.ErrDuplicateMember] rather than share it; so it does at
// once for a node of the name that is not ephemeral. Before its first registration, a member whose node data
// names its strategy reads the nodes of the first few other members and
// fails with [membership.ErrStrategyMismatch] if one names another
// strategy. The member list is watched, and re-listed after every
// reconnection and on a periodic safety timer, because watches are hints
// that can be lost. Views are published sorted, tagged with the zxid of
// the last change to the list and the session they were read in, on a
// latest-wins channel.
//
// Each view carries the members' weights (View.Weights), read once from
// each member's node, with its verdict (member or not), when its name
// first appears in the list, and again only when the members node's
// Cversion says that the name may have gone and come back unseen.
//
// With Config.Seats (DepartureDelay) the member also keeps a persistent
// seat node <root>/groups/<group>/seats/<member>, made or its version
// bumped at every registration, and views list the seats too, with the
// version of each one whose member is away; [Actor.Expire] deletes a
// seat only at the version it was seen away with.
//
// With Config.Drained (the sticky strategy) views list the drain marks,
// the children of <root>/groups/<group>/drained, watched and listed with
// the members in one round trip (View.Drained); the member makes
// drained/ at every registration if it is missing. A mark may name a
// member that is not live: it stays in the view.
package members
