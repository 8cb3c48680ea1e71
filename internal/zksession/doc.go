// Package zksession owns the ZooKeeper connection of one allocator and
// turns the client's connection events into typed session states
// (package session's vocabulary: [session.Status], [session.State]).
//
// The client library reports events through a callback that must not
// block and a channel that silently drops events when full. [Session]
// takes every event from the callback into a queue of its own without
// blocking, and after each one re-reads the client's state and session ID
// rather than trusting that every event arrived. It reports:
//
//   - [session.Up] when a session is established, with its ID; a new ID means the
//     previous session is gone, so [session.Lost] is reported first;
//   - [session.Suspended] as soon as the connection is lost while the session may
//     still be alive on the server;
//   - [session.Lost] when the session expired, when a new session ID appears, or
//     when a local lease runs out, in any state, before the ensemble's
//     leader can have expired the session. Only evidence that went
//     through the leader renews it: the answers to syncs the session
//     sends every quarter of the session timeout, and the connect
//     responses (see lease.go for the arithmetic). With
//     [Config.QuorumCheck] (the allocator's DisconnectGrace), only
//     evidence that a quorum saw the session renews it, which a leader
//     cut off from its quorum cannot give: a check of a node's version,
//     which the ensemble commits, in place of each sync. A session Lost
//     by its lease whose requests are answered again is Up again, as
//     after a reconnection. [session.State.Ended] tells the two kinds of Lost
//     apart: set when the session has ended on the server (expired or
//     replaced: its ephemeral nodes are gone), unset when only the lease
//     ran out (the server may still hold them). A lease-Lost session
//     later found ended is published again, Lost with Ended;
//   - [session.Closed] when the session actor stops.
//
// Each subscriber reads states from its own latest-wins cell, so a slow
// subscriber sees the newest state and never holds up the others: the
// I/O actors subscribe to [State], which adds the connection to issue
// requests on ([Session.Subscribe]); the member's decisions observe the
// plain [session.State] ([Session.Observe]). The
// [session.State.Reconnects] counter tells a subscriber that skipped intermediate
// states that it must re-read everything and re-arm its watches.
package zksession
