package session

import "time"

// The lease: how long this member may take its session to be alive on the
// server, reckoned from evidence that the ensemble's leader saw it.
//
// Only the leader expires sessions. It expires ours at the first tick
// boundary at or after τ + T, where τ is when it last touched the session
// and T the granted timeout: expiry is bucketed by tick and rounded up, so
// it comes no sooner than τ + T. The rounding only adds time; the lease
// counts none of it.
//
// A reply from a follower shows nothing of τ. A follower records its
// clients' activity in a table of its own and hands that to the leader
// only in its answers to the leader's pings, which the leader sends every
// tick/2; a follower whose link to the leader is dark goes on answering
// its clients, pings included, for syncLimit ticks (measured: 2.2 s
// before expiry, 5 s before the follower noticed, at tick 500 ms,
// syncLimit 10, T = 2 s). So the lease is renewed only through the
// leader:
//
//   - A connect response. A new session is created by the leader, and a
//     resumed one is revalidated by it, which touches it; both happen
//     after the connect request was sent, no sooner than the connection
//     was dialed: τ ≥ dial time.
//   - A sync. A follower forwards it to the leader and answers only after
//     the leader did, over the one TCP link between them, in order. The
//     leader does not touch the session for it (the forwarded request
//     carries no connection), but the follower touched it in its table
//     when the sync arrived. Take two syncs, k-1 sent at s₁ and answered
//     at r₁, and k sent at s₂ ≥ r₁ + syncEvery and answered. Sync k-1
//     reached the follower at f ∈ [s₁, r₁]. The leader pinged the
//     follower within tick/2 after f, and the follower answered that ping,
//     listing our session, before it forwarded sync k, which arrived at it
//     at least syncEvery after f. The leader answered sync k, so it had
//     read that ping answer first, and touched us then: τ ≥ f ≥ s₁.
//     The answer to sync k thus moves the anchor to s₁, the send time of
//     the sync answered before it on the same connection.
//
// The lease runs out at leaseFraction × T after the anchor; the server
// expires the session no sooner than T after it, which leaves the
// consumer (1 - leaseFraction) × T to stop. It runs while Up as well as
// while Suspended.
//
// syncEvery = T/4 is at least tick/2 whenever T is at least two ticks,
// the server's lowest timeout unless configured otherwise. The argument
// above also needs the leader's ping to get through to the follower and
// be answered no slower than our sync's round trip to the follower; at
// T = 2 ticks nothing else covers that (above, T/4 - tick/2 does). A
// healthy member's anchor is at most about 2 × syncEvery + 3 round trips
// old (just before the answer to sync k+1 the anchor is s_{k-1}), so with
// syncEvery = T/4 it keeps (leaseFraction - 1/2) × T = 0.3 T of slack, and
// a suspended member reconnecting keeps at least that long to resume
// before it reports Lost. It costs 4/T syncs per second (2 a second at
// T = 2 s, 0.4 at the default 10 s); the client's own pings, every T/3,
// go on as before.

// leaseFraction is the part of the granted session timeout, counted from
// the lease's anchor, after which a member reports its session Lost.
const leaseFraction = 0.8

// syncDivisor sets syncEvery = T / syncDivisor: the pause between the
// answer to one sync and the next sync.
const syncDivisor = 4

// lease is the arithmetic of the lease: what renews it and when it runs
// out. It is pure; the session's Run owns it.
type lease struct {
	anchor  time.Time // the leader touched the session no sooner than this
	pending time.Time // the send time of the last sync answered on this connection; zero if none
}

// connected notes a connect response that granted or resumed the session
// on a connection dialed at dialed. A sync answered before it, on another
// connection, no longer counts (its follower may not have reported it).
func (l *lease) connected(dialed time.Time) {
	l.anchor = later(l.anchor, dialed)
	l.pending = time.Time{}
}

// reset forgets everything, for a new session.
func (l *lease) reset() { *l = lease{} }

// synced notes the answer to a sync sent at sent, on the current
// connection, at least syncEvery after the previous sync was answered.
func (l *lease) synced(sent time.Time) {
	if !l.pending.IsZero() {
		l.anchor = later(l.anchor, l.pending)
	}
	l.pending = later(l.pending, sent)
}

// end returns when the lease runs out for a session timeout of timeout;
// the zero time if nothing has renewed it.
func (l *lease) end(timeout time.Duration) time.Time {
	if l.anchor.IsZero() {
		return time.Time{}
	}
	return l.anchor.Add(time.Duration(leaseFraction * float64(timeout)))
}

// syncEvery is the pause between the answer to one sync and the next.
func syncEvery(timeout time.Duration) time.Duration { return timeout / syncDivisor }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
