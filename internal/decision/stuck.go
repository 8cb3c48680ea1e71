package decision

import (
	"maps"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// StuckMargin is added to the longest a hand-off can take before the core
// asks for the holders of the claims it waits for to be logged.
const StuckMargin = 10 * time.Second

// holderSample is how often, at most, the holders a Held names are taken.
// During a large hand-off every Held names thousands, and Helds come
// hundreds of times a second; a claim counts as held a little later than
// it was, by at most this, which is nothing against StuckMargin.
const holderSample = time.Second

// holder is another session's claim on a partition this member wants.
type holder struct {
	session  int64     // the claim's ephemeral owner
	since    time.Time // when a Held first named that session holding it
	reported bool
	gen      uint64 // the last noteHolders that saw it
}

// stuckAfter is the longest a hand-off between members that agree can
// take (see LongestHandoff), plus StuckMargin.
func (c *Core) stuckAfter() time.Duration {
	return LongestHandoff(c.cfg.Settle, c.cfg.ReleaseTimeout, c.st.Timeout) + StuckMargin
}

// sampleHolders takes the holders the last Held names, unless they were
// taken less than holderSample ago; stepHolders takes them once that has
// passed.
func (c *Core) sampleHolders() {
	c.holdersDue = true
	c.stepHolders()
}

func (c *Core) stepHolders() {
	if c.holdersDue && (c.notedAt.IsZero() || !c.now.Before(c.notedAt.Add(holderSample))) {
		c.holdersDue, c.notedAt = false, c.now
		c.noteHolders(c.held)
	}
}

// holdersWake is when stepHolders is next due; zero if not.
func (c *Core) holdersWake() time.Time {
	if !c.holdersDue {
		return time.Time{}
	}
	return c.notedAt.Add(holderSample)
}

// noteHolders takes the holders a Held names. A claim keeps the time it
// was first seen held while the same session holds it; one no longer
// named is forgotten. A Held of another session says nothing of this one.
// The map is updated in place: during a large hand-off every Held names
// thousands of holders.
func (c *Core) noteHolders(h Held) {
	if h.SessionID != c.st.SessionID || len(h.Blocked) == 0 && len(c.holders) == 0 {
		return
	}
	if c.holders == nil {
		c.holders = make(map[rebalance.Partition]holder, len(h.Blocked))
	}
	c.holdersGen++
	for _, b := range h.Blocked {
		e, ok := c.holders[b.Partition]
		if !ok || e.session != b.Session {
			e = holder{session: b.Session, since: c.now}
		}
		e.gen = c.holdersGen
		c.holders[b.Partition] = e
	}
	if len(c.holders) > len(h.Blocked) {
		for p, e := range c.holders {
			if e.gen != c.holdersGen {
				delete(c.holders, p)
			}
		}
	}
	c.armStuck()
}

// armStuck sets stuckAt to when the oldest holder not yet reported has
// held its claim for stuckAfter; zero if there is none.
func (c *Core) armStuck() {
	var oldest time.Time
	for _, e := range c.holders {
		if !e.reported && (oldest.IsZero() || e.since.Before(oldest)) {
			oldest = e.since
		}
	}
	c.stuckAt = time.Time{}
	if !oldest.IsZero() {
		c.stuckAt = oldest.Add(c.stuckAfter())
	}
}

// reportStuck asks, once for each holding session, for the wanted claims
// another session has held for stuckAfter or more to be logged with who
// holds them. Members that compute the same assignment never keep a claim
// that long, so such a claim means the members disagree (see the claims
// package's logStuck). Only while up: the holders are looked up in
// ZooKeeper.
func (c *Core) reportStuck() {
	c.stepHolders()
	if c.stuckAt.IsZero() || c.now.Before(c.stuckAt) || c.closing || c.st.Status != session.Up {
		return
	}
	after := c.stuckAfter()
	bySession := make(map[int64][]rebalance.Partition)
	oldest := make(map[int64]time.Time)
	for p, e := range c.holders {
		if e.reported || c.now.Sub(e.since) < after {
			continue
		}
		if _, wanted := slices.BinarySearchFunc(c.lastWant, p, rebalance.Compare); !wanted {
			delete(c.holders, p) // the claims actor drops it with its next Held
			continue
		}
		bySession[e.session] = append(bySession[e.session], p)
		if o, ok := oldest[e.session]; !ok || e.since.Before(o) {
			oldest[e.session] = e.since
		}
		e.reported = true
		c.holders[p] = e
	}
	for _, s := range slices.Sorted(maps.Keys(bySession)) {
		ps := bySession[s]
		rebalance.Sort(ps)
		c.ready.Stuck = append(c.ready.Stuck, Stuck{Session: s, Partitions: ps, HeldFor: c.now.Sub(oldest[s])})
	}
	c.armStuck()
}

// stuckWake is when reportStuck or stepHolders is next due; zero if
// neither (the report waits while the session is down: coming up again
// steps the core).
func (c *Core) stuckWake() time.Time {
	at := c.holdersWake()
	if c.st.Status == session.Up && !c.stuckAt.IsZero() && (at.IsZero() || c.stuckAt.Before(at)) {
		at = c.stuckAt
	}
	return at
}
