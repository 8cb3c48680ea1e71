package decision

import (
	"log/slog"
	"time"

	"github.com/zkalloc/zkalloc/session"
)

// The drain that ends a member: Close revokes everything, and the claims
// stay until the consumer has stopped, the drain's bound has passed, or
// the session, and the claims with it, has ended on the server.

// Close starts the drain that ends a member: an Update revokes every
// partition, and nothing is assigned or claimed any more. The claims stay
// until [Core.Drained].
func (c *Core) Close(reason string) {
	if c.closing {
		return
	}
	c.closing, c.closeAt, c.closeIn = true, c.now, c.st.SessionID
	if c.primed() {
		c.publish(nil, nil, nil, c.snap.Generation, c.snap.Members, reason)
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

// Drained reports whether a closing member may give up its claims: its
// consumer has stopped every partition (it acked the Update that revoked
// them, once delivered), the drain's bound has passed (ReleaseTimeout
// after the consumer received the final Update, undeliveredFactor ×
// ReleaseTimeout after Close if it did not), or the claims are gone (see
// claimsGone).
func (c *Core) Drained() bool {
	if !c.closing {
		return false
	}
	switch {
	case c.claimsGone():
		return true
	case !c.now.Before(c.closeBy):
		return true
	}
	return c.ho.idle()
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

// stepDrain logs, once, that the drain ran out of time with the consumer
// still working on partitions whose claims go now.
func (c *Core) stepDrain() {
	if c.now.Before(c.closeBy) || c.ho.idle() || c.closeLate || c.claimsGone() {
		return
	}
	c.closeLate = true
	msg := "zkalloc: consumer did not ack the final Update within ReleaseTimeout of receiving it; closing anyway, and its partitions go to other members while it may still work on them"
	if c.closeBound == undelivered {
		msg = "zkalloc: consumer did not receive the final Update; closing anyway, and its partitions go to other members while it may still work on them"
	}
	c.log(slog.LevelError, msg, "bound", c.closeBound.String(), "releaseTimeout", c.cfg.ReleaseTimeout, "sinceClose", c.now.Sub(c.closeAt))
}
