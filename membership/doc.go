// Package membership is the vocabulary of a group's member list: the
// [View] a member reads of it (the live members, and with
// DepartureDelay the [Seat]s of those away), what a member's node holds
// ([Info], written as JSON: host, pid, start time, zkalloc version and
// strategy), which children of members/ count as members ([IsMember]),
// the bounds a list is read within ([MaxMembers], [MaxMembersBytes]),
// and the errors that stop a member from joining
// ([ErrDuplicateMember], [ErrStrategyMismatch], [ErrGroupFull]).
//
// The allocator computes its assignment over views like these; tools
// that read a group's nodes, such as the zkalloc command, read them with
// the same rules. The package imports only the standard library; the
// actor that registers a member and watches the list is internal.
//
// A member's node is <root>/groups/<group>/members/<member>, ephemeral;
// with DepartureDelay its seat is <root>/groups/<group>/seats/<member>,
// persistent, deleted when the delay after its member left has run out;
// a member's drain mark is <root>/groups/<group>/drained/<member>,
// persistent, made and deleted by an operator (`zkalloc drain`,
// `undrain`), and read by members of the sticky strategy.
package membership
