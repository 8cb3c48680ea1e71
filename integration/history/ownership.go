package history

import (
	"slices"
	"time"
)

// The sweep's bookkeeping of who holds (a) and who owns (b) each
// partition, and of the expected set in force.

// hold counts one more Update in member mi's window assigning id; if mi
// did not hold id, it now does, alongside any other holder.
func (c *checker) hold(mi int, id int32, t time.Time) {
	m := c.members[mi]
	m.grow(len(c.parts))
	m.hold[id]++
	if m.hold[id] > 1 {
		return
	}
	ps := &c.state[id]
	for _, h := range ps.holders {
		first := c.members[h]
		first.grow(len(c.parts))
		_, assigned := slices.BinarySearch(first.latest, id)
		ps.open = append(ps.open, openOverlap{
			Overlap: Overlap{
				Partition: c.parts[id], First: first.name, Second: m.name, From: t, Unacked: !assigned,
				FirstSince: first.since[id], SecondSince: m.since[id],
				FirstToken: first.tokens[id], SecondToken: m.tokens[id],
			},
			a: h, b: mi,
		})
	}
	ps.holders = append(ps.holders, mi)
}

// grow makes m's slices by pid cover n partitions.
func (m *memberState) grow(n int) {
	if k := n - len(m.hold); k > 0 {
		m.hold = append(m.hold, make([]int32, k)...)
	}
	if k := n - len(m.since); k > 0 {
		m.since = append(m.since, make([]time.Time, k)...)
		m.tokens = append(m.tokens, make([]int64, k)...)
	}
}

// unhold undoes one hold; when member mi no longer holds id, the double
// ownerships it was part of end.
func (c *checker) unhold(mi int, id int32, t time.Time) {
	m := c.members[mi]
	m.hold[id]--
	if m.hold[id] > 0 {
		return
	}
	ps := &c.state[id]
	ps.holders = slices.DeleteFunc(ps.holders, func(h int) bool { return h == mi })
	ps.open = slices.DeleteFunc(ps.open, func(o openOverlap) bool {
		if o.a != mi && o.b != mi {
			return false
		}
		o.To = t
		c.overlaps = append(c.overlaps, o.Overlap)
		return true
	})
}

// own counts one more member whose newest Update assigns id.
func (c *checker) own(id int32, t time.Time) {
	ps := &c.state[id]
	c.conv.bad -= ps.bad()
	ps.owners++
	c.conv.bad += ps.bad()
	if ps.owners == 1 && ps.expected {
		c.unownedUntil(id, t, false)
		ps.owned = true
	}
}

// disown undoes own.
func (c *checker) disown(id int32, t time.Time) {
	ps := &c.state[id]
	c.conv.bad -= ps.bad()
	ps.owners--
	c.conv.bad += ps.bad()
	if ps.owners == 0 {
		ps.unownedFrom = t
	}
}

// setExpected makes ids, sorted pids, the expected set from t on.
func (c *checker) setExpected(ids []int32, t time.Time) {
	added, removed := diff(c.expected, ids)
	for _, id := range removed {
		ps := &c.state[id]
		if ps.owners == 0 {
			c.unownedUntil(id, t, false)
		}
		// Owners may keep it a while: removal takes a moment to reach
		// them. It only stops the group being converged meanwhile, and
		// fails (c) if it lasts to the end.
		c.conv.bad -= ps.bad()
		ps.expected = false
		c.conv.bad += ps.bad()
	}
	for _, id := range added {
		ps := &c.state[id]
		c.conv.bad -= ps.bad()
		ps.expected, ps.added = true, true
		c.conv.bad += ps.bad()
		// Owners may have it already, from Updates that arrived before
		// the change was recorded.
		ps.owned, ps.unownedFrom = ps.owners > 0, t
	}
	c.expected = ids
}

// bad is 1 if the partition is not owned as the expected set in force
// wants: once if expected, not at all otherwise.
func (ps *partState) bad() int {
	if ps.expected && ps.owners != 1 || !ps.expected && ps.owners > 0 {
		return 1
	}
	return 0
}

// unownedUntil ends at to (open: still at the end) the stretch during
// which id was expected and unowned. If id had been owned since it became
// expected, the stretch is a gap. Otherwise it is the wait for a first
// owner, which is no gap unless it breaks (b): for a partition expected
// from the start, only if never owned at all (open); for one added later,
// also if it lasts past the deadline.
func (c *checker) unownedUntil(id int32, to time.Time, open bool) {
	ps := &c.state[id]
	g := Gap{Partition: c.parts[id], From: ps.unownedFrom, To: to, Open: open}
	late := c.late(g)
	if !ps.owned && !(late && (open || ps.added)) {
		return
	}
	if !ps.hasGap || g.Duration() > ps.longest.Duration() {
		ps.longest, ps.hasGap = g, true
	}
	if late {
		c.unowned = append(c.unowned, g)
	}
}

// late reports whether g breaks (b): still open at the end, or lasting
// longer than the deadline counted from the later of its start and the
// end of the faults.
func (c *checker) late(g Gap) bool {
	if g.Open {
		return true
	}
	if c.opts.Deadline <= 0 {
		return false
	}
	from := g.From
	if c.faultsEnd.After(from) {
		from = c.faultsEnd
	}
	return g.To.Sub(from) > c.opts.Deadline
}

// diff returns what next adds to and removes from prev, both sorted.
func diff(prev, next []int32) (added, removed []int32) {
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		switch {
		case j == len(next) || i < len(prev) && prev[i] < next[j]:
			removed = append(removed, prev[i])
			i++
		case i == len(prev) || next[j] < prev[i]:
			added = append(added, next[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return added, removed
}
