package claims

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Stuck claims: members that compute the same assignment hand a claim
// over within a bounded time (see [decision.LongestHandoff]). A wanted
// claim that another session holds for longer means the members do not
// agree, and each waits for the other's claims for ever: their consumers
// are silently never given those partitions. The actor times the claims
// it waits for, here, and warns once for each holding session when one
// has been held past the bound (see logStuck). The timing is pure: the
// actor gives it the time, from its clock, and arms one timer for
// [waits.wake].

// stuckMargin is added to the longest a hand-off can take before a
// wanted claim that another session holds counts as stuck.
const stuckMargin = 10 * time.Second

// stuckAfter is how long another session may hold a wanted claim before
// it counts as stuck: the longest a hand-off between members that agree
// can take, with this member's Settle and ReleaseTimeout and the session
// timeout the server granted (see [decision.LongestHandoff]), plus
// stuckMargin.
func stuckAfter(settle, releaseTimeout, granted time.Duration) time.Duration {
	return decision.LongestHandoff(settle, releaseTimeout, granted) + stuckMargin
}

// waits times the wanted claims that other sessions hold: for each, the
// holding session and since when this member has found it held by that
// session. It is pure: no clock, no I/O. Not safe for concurrent use.
type waits struct {
	after time.Duration // see stuckAfter; set with the session state
	up    bool          // the session is up: holders can be looked up
	m     map[rebalance.Partition]wait
	// next caches wake's answer, valid unless stale: the actor asks after
	// every event, and a scan of 100,000 claims takes 2 ms.
	next  time.Time
	stale bool
}

// wait is another session's claim on a partition this member wants.
type wait struct {
	session  int64     // the claim's holder: its ephemeral owner, or its hold record's session
	since    time.Time // when this member first found that session holding it
	reported bool
}

// stuck is one warning: the wanted claims session has held for heldFor
// (the longest any of them has), past the bound.
type stuck struct {
	session    int64
	partitions []rebalance.Partition // sorted
	heldFor    time.Duration
}

func newWaits() waits { return waits{m: make(map[rebalance.Partition]wait), stale: true} }

// setSession takes this member's session state: whether it is up, and
// the bound from the granted timeout, which may have changed.
func (w *waits) setSession(up bool, after time.Duration) {
	if up != w.up || after != w.after {
		w.up, w.after, w.stale = up, after, true
	}
}

// held notes that session holds p, found at now. A claim keeps the time
// it was first found held while the same session holds it; one that
// passes to another session is timed again.
func (w *waits) held(p rebalance.Partition, session int64, now time.Time) {
	if e, ok := w.m[p]; ok && e.session == session {
		return
	}
	w.m[p] = wait{session: session, since: now}
	w.stale = true
}

// gone forgets p: held by this session now, free, or no longer wanted.
func (w *waits) gone(p rebalance.Partition) {
	if _, ok := w.m[p]; ok {
		delete(w.m, p)
		w.stale = true
	}
}

// keep forgets every claim that wanted says is no longer wanted.
func (w *waits) keep(wanted func(rebalance.Partition) bool) {
	maps.DeleteFunc(w.m, func(p rebalance.Partition, _ wait) bool {
		if wanted(p) {
			return false
		}
		w.stale = true
		return true
	})
}

// clear forgets every claim: a new session of this member looks at them
// again, and times them afresh.
func (w *waits) clear() {
	clear(w.m)
	w.stale = true
}

// due returns, at now, the warnings due: for each holding session, in
// order, the wanted claims it has held for the bound or more and that
// were not warned of yet, which it marks warned. A claim that wanted
// says is no longer wanted is forgotten. None while the session is down:
// the holders could not be looked up; they are warned of once it is up.
func (w *waits) due(now time.Time, wanted func(rebalance.Partition) bool) []stuck {
	if !w.up {
		return nil
	}
	bySession := make(map[int64][]rebalance.Partition)
	oldest := make(map[int64]time.Time)
	for p, e := range w.m {
		if e.reported || now.Sub(e.since) < w.after {
			continue
		}
		w.stale = true
		if !wanted(p) {
			delete(w.m, p)
			continue
		}
		bySession[e.session] = append(bySession[e.session], p)
		if o, ok := oldest[e.session]; !ok || e.since.Before(o) {
			oldest[e.session] = e.since
		}
		e.reported = true
		w.m[p] = e
	}
	var out []stuck
	for _, s := range slices.Sorted(maps.Keys(bySession)) {
		ps := bySession[s]
		rebalance.Sort(ps)
		out = append(out, stuck{session: s, partitions: ps, heldFor: now.Sub(oldest[s])})
	}
	return out
}

// wake returns when [waits.due] next has a warning: when the oldest claim
// not yet warned of has been held for the bound. Zero if there is none,
// or while the session is down (coming up asks again).
func (w *waits) wake() time.Time {
	if !w.up {
		return time.Time{}
	}
	if !w.stale {
		return w.next
	}
	w.next, w.stale = w.scan(), false
	return w.next
}

// scan returns when the oldest claim not yet warned of has been held for
// the bound; zero if there is none.
func (w *waits) scan() time.Time {
	var oldest time.Time
	found := false
	for _, e := range w.m {
		if !e.reported && (!found || e.since.Before(oldest)) {
			oldest, found = e.since, true
		}
	}
	if !found {
		return time.Time{}
	}
	return oldest.Add(w.after)
}

// maxNamed is how many partitions a warning names.
const maxNamed = 10

// named returns the first maxNamed of ps, comma-separated, and how many
// more there are.
func named(ps []rebalance.Partition) string {
	var b strings.Builder
	for i, p := range ps {
		if i == maxNamed {
			fmt.Fprintf(&b, " and %d more", len(ps)-maxNamed)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(p.String())
	}
	return b.String()
}
