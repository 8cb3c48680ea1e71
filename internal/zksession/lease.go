package zksession

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
//
// # A deposed leader
//
// All of the above trusts the leader that answers, and a leader need not
// know that it has been deposed. Cut off at time c from a majority of the
// ensemble (alone, or with some followers and their clients), it goes on
// answering syncs, which need no quorum (Leader.processSync), and
// revalidating resumed sessions, until it has missed its followers' acks
// for syncLimit ticks, as it counts them (every tick, from the tick of
// the last ack, which came before c): it steps down at
// c + (syncLimit + 1) tick at the latest, and closes its clients'
// connections, as its followers then close theirs. The majority's followers give up on it once they have heard
// nothing for syncLimit ticks, its pings having come every tick/2: from
// c + (syncLimit - 1/2) tick. They elect a new leader, whose session
// tracker starts every session's expiry clock when it starts serving
// (LeaderZooKeeperServer.createSessionTracker): it can expire ours from
// that start + T, whatever the deposed leader saw. (The election adds
// at least 200 ms, FastLeaderElection's finalizeWait; none of the
// arithmetic below counts it.)
//
// With syncs, and a member that keeps its partitions while disconnected
// (DisconnectGrace), the deposed leader's last answer, at up to
// c + (syncLimit + 1) tick, anchors the lease about T/4 earlier; it ends
// 0.8 T after that, at c + (syncLimit + 1) tick + 0.55 T, while the new
// leader may expire the session from c + (syncLimit - 1/2) tick + T. The
// lease outlives the session by up to 1.5 tick - 0.45 T, whatever
// syncLimit: 1.2 s at tick 2 s and T = 4 s (less the election).
//
// Without DisconnectGrace the member revokes everything when its
// connection drops, which the deposed leader's stepping down does: at the
// latest c + (syncLimit + 1) tick, T - 1.5 tick before the new leader can
// expire the session. As T is at least 2 ticks (the server's lowest
// timeout, unless minSessionTimeout is set lower), that leaves the
// consumer at least tick/2 (1 s at tick 2 s, T = 4 s; 7 s at the default
// T = 10 s), whatever syncLimit. So syncs stay the lease's evidence then.
//
// # The quorum lease
//
// With DisconnectGrace, the lease takes only evidence that a quorum saw
// the session (Config.QuorumCheck): in place of each sync, a multi that
// only checks the version (any) of a node that exists. It changes
// nothing, yet the leader makes every multi a transaction
// (PrepRequestProcessor), proposes it and answers it only once a quorum
// has logged it: measured on a 3-node ensemble, each one adds 1 to the
// last zxid and 83 bytes to each server's log. A follower forwards it
// to the leader (FollowerRequestProcessor) over the same link as a sync,
// in order after its ping answers, and answers it only after the
// leader's commit. Take such a check, sent at s and answered:
//
//   - Its transaction was acknowledged by a quorum Q, each server after
//     s. A later leader serves only once a quorum Q' has taken its new
//     epoch (Leader.waitForEpochAck, before startZkServer creates its
//     session tracker). Some server is in both; it acknowledged our
//     transaction while it followed (or was) the leader that committed
//     it, before it took the new epoch, after which it follows no leader
//     of an older one (Learner.registerWithLeader). So every
//     later leader starts its expiry clocks after s, and expires the
//     session no sooner than s + T.
//   - The leader that committed it touched the session while leading,
//     as shown above for a sync: through a follower, no sooner than the
//     send time of the check answered before it on the connection;
//     directly, when the check arrived.
//   - An earlier leader could have expired the session only by a
//     transaction committed before the committing leader started, which
//     then knows no such session and fails the check.
//
// So the answer to check k anchors the lease, as a sync's did, at the
// send time of the check answered before it on the connection, and the
// lease keeps (1 - leaseFraction) × T = 0.2 T of margin against every
// leader, for any syncLimit (the ping argument above only needs T of at
// least 2 ticks). A deposed leader commits nothing: the checks sent
// through it hang until it steps down (as a sync through a follower cut
// off from its leader does), and the lease runs out at most 0.8 T after
// the last check a quorum acknowledged, which was sent before c. At tick
// 2 s, syncLimit 2 and T = 4 s, the member revokes by c + 3.2 s, and the
// new leader expires the session from c + 3 s + 4 s = c + 7 s: a margin
// of at least 3.8 s, where syncs gave an overlap of up to 1.2 s.
//
// Connect responses: a new session is itself a transaction committed the
// same way (createSession; ZooKeeper's local sessions are off by
// default), proposed after the dial, so it anchors the lease at the dial
// as before. A resumed session is revalidated by the leader alone, which
// a deposed one does too; so the dial counts only once a check sent on
// that connection commits. A follower follows one leader and closes its
// clients' connections when it stops, so the leader that revalidated the
// session is the one that committed the check: it touched the session
// after the dial, and later leaders start after the check was sent.
//
// Cost: 4/T transactions a second per member in place of 4/T syncs (0.4
// at the default T = 10 s, 2 at T = 2 s), each written to every server's
// log and fsynced there; see docs/session.md for latency measured.

// leaseFraction is the part of the granted session timeout, counted from
// the lease's anchor, after which a member reports its session Lost.
const leaseFraction = 0.8

// syncDivisor sets syncEvery = T / syncDivisor: the pause between the
// answer to one sync and the next sync.
const syncDivisor = 4

// lease is the arithmetic of the lease: what renews it and when it runs
// out. It is pure; the session's Run owns it.
type lease struct {
	// quorum: only requests the ensemble committed renew it (the quorum
	// lease above); set once, kept by reset.
	quorum  bool
	anchor  time.Time // no leader that can expire the session touched it before this
	pending time.Time // what the next answer on this connection makes the anchor; zero if nothing
}

// connected notes a connect response that created (created) or resumed
// the session on a connection dialed at dialed. A request answered
// before it, on another connection, no longer counts (its follower may
// not have reported it). In the quorum lease a resumed session's connect
// response counts only once a request on the connection commits.
func (l *lease) connected(dialed time.Time, created bool) {
	l.pending = time.Time{}
	if l.quorum && !created {
		l.pending = dialed
		return
	}
	l.anchor = later(l.anchor, dialed)
}

// reset forgets everything but the kind of lease, for a new session.
func (l *lease) reset() { *l = lease{quorum: l.quorum} }

// answered notes the answer to a request sent at sent through the leader,
// on the current connection, at least syncEvery after the previous one
// was answered: a sync, or a request the ensemble committed (committed).
// In the quorum lease only the latter renews it.
func (l *lease) answered(sent time.Time, committed bool) {
	if l.quorum && !committed {
		return
	}
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
