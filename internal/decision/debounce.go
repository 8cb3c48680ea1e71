package decision

import "time"

// settleFactor bounds a burst: however long changes keep coming, the
// assignment is computed at most settleFactor × Settle after the first
// change of the burst.
const settleFactor = 5

// debouncer coalesces bursts of changes, in the manner of serf's
// coalescer: a quiet period that restarts with every change (end of the
// burst) and a deadline from the burst's first change (latency cap). It is
// pure: the actor feeds it times and arms one timer for [debouncer.due].
type debouncer struct {
	settle  time.Duration
	pending bool
	first   time.Time // first change of the burst
	last    time.Time // latest change of the burst
}

// change records a change at now.
func (d *debouncer) change(now time.Time) {
	if !d.pending {
		d.pending, d.first = true, now
	}
	d.last = now
}

// due returns when the burst should be acted on, and whether one is
// pending.
func (d *debouncer) due() (time.Time, bool) {
	if !d.pending {
		return time.Time{}, false
	}
	quiet := d.last.Add(d.settle)
	limit := d.first.Add(settleFactor * d.settle)
	if limit.Before(quiet) {
		return limit, true
	}
	return quiet, true
}

// ready reports whether a pending burst is due at now.
func (d *debouncer) ready(now time.Time) bool {
	at, ok := d.due()
	return ok && !now.Before(at)
}

// done ends the burst.
func (d *debouncer) done() { d.pending = false }
