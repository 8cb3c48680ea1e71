package member

import (
	"maps"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// StuckMargin is added to the longest a hand-off can take before the core
// asks for the holders of the claims it waits for to be logged.
const StuckMargin = 10 * time.Second

// holder is another session's claim on a partition this member wants.
type holder struct {
	session  int64     // the claim's ephemeral owner
	since    time.Time // when a Held first named that session holding it
	reported bool
}

// stuckAfter is the longest a hand-off between members that agree can
// take, plus StuckMargin: the holder debounces (a burst is cut short at
// settleFactor × Settle), its consumer acks (within ReleaseTimeout), or
// its session expires. That is the timeout the server granted, not the
// one asked for: the server bounds it.
func (c *Core) stuckAfter() time.Duration {
	return settleFactor*c.cfg.Settle + c.cfg.ReleaseTimeout + c.st.Timeout + StuckMargin
}

// noteHolders takes the holders a Held names. A claim keeps the time it
// was first seen held while the same session holds it; one no longer
// named is forgotten. A Held of another session says nothing of this one.
func (c *Core) noteHolders(h claims.Held) {
	if h.SessionID != c.st.SessionID || len(h.Blocked) == 0 && len(c.holders) == 0 {
		return
	}
	next := make(map[Partition]holder, len(h.Blocked))
	for _, b := range h.Blocked {
		e, ok := c.holders[b.Partition]
		if !ok || e.session != b.Session {
			e = holder{session: b.Session, since: c.now}
		}
		next[b.Partition] = e
	}
	c.holders = next
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
	if c.stuckAt.IsZero() || c.now.Before(c.stuckAt) || c.closing || c.st.Status != session.Up {
		return
	}
	after := c.stuckAfter()
	bySession := make(map[int64][]Partition)
	oldest := make(map[int64]time.Time)
	for p, e := range c.holders {
		if e.reported || c.now.Sub(e.since) < after {
			continue
		}
		if _, wanted := slices.BinarySearchFunc(c.lastWant, p, partitions.Compare); !wanted {
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
		partitions.Sort(ps)
		c.ready.Stuck = append(c.ready.Stuck, claims.Stuck{Session: s, Parts: ps, HeldFor: c.now.Sub(oldest[s])})
	}
	c.armStuck()
}

// stuckWake is when reportStuck is next due; zero if not while the
// session is down (coming up again steps the core).
func (c *Core) stuckWake() time.Time {
	if c.st.Status != session.Up {
		return time.Time{}
	}
	return c.stuckAt
}
