package decision

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/zkalloc/zkalloc/session"
)

// The drain that ends a member: Close revokes everything, and the claims
// stay until the consumer has stopped, the drain's bound has passed, the
// caller stops waiting (GiveUp: Shutdown's context ended), or the
// session, and the claims with it, has ended on the server.
//
// Once the consumer has stopped, the claims and their hold records are
// released before the session closes (the final Want, of no claim), as
// in any hand-off: the next owners then create their claims at once,
// instead of reading each record of the ended session to take its
// partition over (one read a partition). The drain still ends as acked
// if the release has not finished ReleaseTimeout after the ack, the
// caller gives up (Close does ReleaseTimeout after its call) or the
// session ends: the records left are then taken over as after a crash.

// DrainEnd says how a closing member's drain ended.
type DrainEnd int

const (
	// DrainOpen: not closing, or not drained yet.
	DrainOpen DrainEnd = iota
	// DrainAcked: the consumer stopped every partition it had (it acked
	// the Update that revoked them, once delivered), or had none.
	DrainAcked
	// DrainSessionEnded: the session ended on the server, the claims with
	// it, before the consumer acked: nothing was left to keep.
	DrainSessionEnded
	// DrainTimedOut: the drain's own bound passed without the ack
	// (ReleaseTimeout after the consumer received the final Update,
	// undeliveredFactor × ReleaseTimeout after Close if it did not).
	DrainTimedOut
	// DrainGaveUp: [Core.GiveUp] ended it without the ack.
	DrainGaveUp
)

// String returns "open", "acked", "session ended", "timed out" or "gave
// up".
func (d DrainEnd) String() string {
	switch d {
	case DrainOpen:
		return "open"
	case DrainAcked:
		return "acked"
	case DrainSessionEnded:
		return "session ended"
	case DrainTimedOut:
		return "timed out"
	case DrainGaveUp:
		return "gave up"
	}
	return fmt.Sprintf("DrainEnd(%d)", int(d))
}

// Close starts the drain that ends a member: an Update revokes every
// partition (as [RevokeShutdown], or [RevokeLost] if the session is
// already lost), and nothing is assigned or claimed any more. The claims
// stay until [Core.Drained].
func (c *Core) Close(reason string) {
	if c.closing {
		return
	}
	c.closing, c.closeAt, c.closeIn = true, c.now, c.st.SessionID
	if c.primed() {
		c.publish(nil, nil, nil, c.snap.Generation, c.snap.Members, reason, every(c.lostOr(RevokeShutdown)))
	}
	c.drainBy()
	c.releaseAt, c.graceAt = time.Time{}, time.Time{}
	c.settle.done()
}

// drainBy sets when a closing member's drain ends without an ack: as the
// hand-off releases a revoked partition (see handoff), when the last
// partition in use would be released. The final Update revokes
// everything, so that is ReleaseTimeout after the consumer receives it,
// or undeliveredFactor × ReleaseTimeout after Close if it never does;
// earlier for partitions an Update received before Close revoked
// already. It only moves on a delivery (or an ack, which can only end
// the drain sooner), so Close stays bounded.
func (c *Core) drainBy() {
	if c.closing {
		c.closeBy, c.closeBound = c.ho.drainBy()
	}
}

// GiveUp ends the drain without waiting any longer for the consumer's
// ack: whoever closes the member has stopped waiting (the context of
// zkalloc's Allocator.Shutdown ended). It closes the member first if
// Close was not called. From now on [Core.Drained] reports true; if the
// consumer had not stopped every partition, the drain ends as
// [DrainGaveUp], which is logged.
func (c *Core) GiveUp(reason string) {
	c.Close(reason)
	if c.gaveUp {
		return
	}
	c.gaveUp = true
	if c.DrainEnd() == DrainGaveUp {
		c.log(slog.LevelError, "zkalloc: stopped waiting for the consumer's ack of the final Update (the shutdown's context ended); closing anyway, and its partitions go to other members while it may still work on them",
			"reason", reason, "sinceClose", c.now.Sub(c.closeAt))
	}
	c.step()
}

// Drained reports whether a closing member may give up its claims: see
// [Core.DrainEnd].
func (c *Core) Drained() bool { return c.DrainEnd() != DrainOpen }

// DrainEnd says whether, and how, a closing member's drain has ended: its
// consumer has stopped every partition (it acked the Update that revoked
// them, once delivered), the claims are gone (see claimsGone), the
// drain's bound has passed (ReleaseTimeout after the consumer received
// the final Update, undeliveredFactor × ReleaseTimeout after Close if it
// did not), or [Core.GiveUp] ended it; checked in that order. Once it
// has ended, the answer no longer changes.
func (c *Core) DrainEnd() DrainEnd {
	if c.drainEnd != DrainOpen || !c.closing {
		return c.drainEnd
	}
	switch {
	case c.ho.idle():
		if c.finalSeq == 0 || c.released() || c.claimsGone() || !c.now.Before(c.releaseBy) || c.gaveUp {
			c.drainEnd = DrainAcked
		}
	case c.claimsGone():
		c.drainEnd = DrainSessionEnded
	case !c.now.Before(c.closeBy):
		c.drainEnd = DrainTimedOut
	case c.gaveUp:
		c.drainEnd = DrainGaveUp
	}
	return c.drainEnd
}

// claimsGone reports whether the session that held this member's claims
// when Close was called has ended on the server, and its claims with it:
// it expired or was replaced (Lost with Ended, or Up with another
// session), the session actor closed it, or there was none. A lease that
// ran out here (Lost without Ended) is not that: the server may still
// hold the session and every claim, and let it resume.
func (c *Core) claimsGone() bool {
	switch {
	case c.closeIn == 0 || c.st.Status == session.Closed:
		return true
	case c.st.SessionID != 0 && c.st.SessionID != c.closeIn:
		return true // replaced: the reports of its end may have been skipped
	case c.st.Status == session.Lost:
		return c.st.Ended
	}
	return false
}

// releaseAll asks the claims actor, once, to release every claim and
// hold record of the session, when the consumer has stopped every
// partition and the actor has reported claims, or records of vanished
// ones, held in the current connection. Without such a report (nothing
// held, or the connection down) there is nothing it could release now,
// and the drain ends at the ack.
func (c *Core) releaseAll() {
	if c.finalSeq != 0 || c.drainEnd != DrainOpen || !c.ho.idle() || c.st.Status != session.Up || !c.heldCurrent() ||
		len(c.held.Partitions) == 0 && len(c.held.Vanished) == 0 {
		return
	}
	c.desiredSeq++
	c.finalSeq = c.desiredSeq
	c.releaseBy = c.now.Add(c.cfg.ReleaseTimeout)
	c.lastWant, c.wantSince = nil, nil
	c.log(slog.LevelDebug, "zkalloc: releasing every claim before closing", "claims", len(c.held.Partitions), "seq", c.desiredSeq)
	c.ready.Want = &Want{SessionID: c.st.SessionID, Reconnects: c.st.Reconnects, Seq: c.desiredSeq}
}

// released reports whether the claims actor has answered the final Want
// with nothing held.
func (c *Core) released() bool {
	return c.heldCurrent() && c.held.Seq >= c.finalSeq && len(c.held.Partitions) == 0 && len(c.held.Vanished) == 0
}

// stepDrain asks for the release once the consumer has stopped, and logs,
// once, that the drain ran out of time with the consumer still working on
// partitions whose claims go now.
func (c *Core) stepDrain() {
	c.releaseAll()
	if c.closeLate || c.DrainEnd() != DrainTimedOut {
		return
	}
	c.closeLate = true
	msg := "zkalloc: consumer did not ack the final Update within ReleaseTimeout of receiving it; closing anyway, and its partitions go to other members while it may still work on them"
	if c.closeBound == undelivered {
		msg = "zkalloc: consumer did not receive the final Update; closing anyway, and its partitions go to other members while it may still work on them"
	}
	c.log(slog.LevelError, msg, "bound", c.closeBound.String(), "releaseTimeout", c.cfg.ReleaseTimeout, "sinceClose", c.now.Sub(c.closeAt))
}
