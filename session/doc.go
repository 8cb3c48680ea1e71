// Package session is the vocabulary of a member's ZooKeeper session: its
// [Status] (connecting, up, suspended, lost, closed) and the [State]
// snapshots its owner publishes, with the session's ID, how often it has
// connected, the timeout the server granted and, when it is lost,
// whether it has ended on the server ([State.Ended]) or only this
// member's lease ran out.
//
// The allocator's decisions are made on these states: a member revokes
// its partitions when the session is suspended (at once, or after
// DisconnectGrace) and always when it is lost, which its lease reports
// before the server can expire it. Tools and tests that follow a member,
// or feed its decisions, use the same types. The package imports only
// the standard library; the connection itself, and the actor that owns
// it, are internal.
package session
