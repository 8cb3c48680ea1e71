package claims

import (
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/rebalance"
)

// A member that takes over many claims at once, as when it joins a group
// of 100,000 partitions held by another, finds its batches of creates
// failing on claims still held, and a look at each of those, one request
// each, is most of the hand-off: 50,000 reads there, seconds of the
// server's time, while the old owner reads each claim it releases too.
//
// So when an attempt has more than groupLooksAbove claims to look at, a
// failed batch is looked at only where it failed: ZooKeeper applies a
// multi-operation's operations in order and reports the first that
// failed, a partition's claim or its hold record. The partitions before
// it were free and are taken again at once; that one is looked at with a
// watch (on its hold record, see holds.go, or on its claim if it has no
// record); the partitions after it are deferred: they wait, unread, on
// that watch, and are tried again, as a batch, when it fires. A member
// handing over claims releases them in order and a hundred to a
// multi-operation, claims and records together, as the new owner claims
// them, so that when the one watched record goes, its batch goes with it:
// a hand-off of 50,000 claims to one member costs that member some 1,500
// requests instead of 51,000. A batch whose culprit's holder has ended (a
// crashed member) is not deferred: each of its hold records is read, and
// the batch taken over (see acquireAll).
//
// A deferred claim may be held by a member other than the watched
// claim's holder, or be free. So a group waits at most groupWait: then
// its claims are looked at one by one, as they are below groupLooksAbove
// (and as claims whose outcome is unknown always are). A watched claim
// that is never released (members that disagree) so holds up the others
// of its batch for at most groupWait.
const (
	groupLooksAbove = 1000
	groupWait       = 10 * time.Second
)

// groups are the claims deferred behind a watched claim, by that claim.
type groups struct {
	behind map[rebalance.Partition][]rebalance.Partition
	since  map[rebalance.Partition]time.Time // when each group began to wait
	single map[rebalance.Partition]bool      // claims to look at one by one in the next attempt
	timer  actor.Timer                       // fires when the oldest group has waited groupWait
	clock  actor.Clock
	due    time.Time // when timer fires; zero if stopped
}

func newGroups(clock actor.Clock) groups {
	return groups{
		behind: make(map[rebalance.Partition][]rebalance.Partition),
		since:  make(map[rebalance.Partition]time.Time),
		single: make(map[rebalance.Partition]bool),
		timer:  actor.StoppedTimer(clock),
		clock:  clock,
	}
}

// add defers p behind watched.
func (g *groups) add(watched, p rebalance.Partition) {
	if _, ok := g.since[watched]; !ok {
		now := g.clock.Now()
		g.since[watched] = now
		if g.due.IsZero() {
			g.due = now.Add(groupWait)
			g.timer.Reset(groupWait)
		}
	}
	g.behind[watched] = append(g.behind[watched], p)
}

// clear forgets every group: their watches are gone, and with them the
// waiting state of every claim.
func (g *groups) clear() {
	clear(g.behind)
	clear(g.since)
	g.timer.Stop()
	g.due = time.Time{}
}

// endGroup ends the wait of the claims deferred behind p, whose watch
// fired: the next attempt tries them again.
func (c *Actor) endGroup(p rebalance.Partition) {
	for _, q := range c.groups.behind[p] {
		delete(c.waiting, q)
	}
	delete(c.groups.behind, p)
	delete(c.groups.since, p)
}

// ungroupOld ends the wait of the groups that have waited groupWait; the
// next attempt looks at their claims one by one. It re-arms the timer for
// the next group due.
func (c *Actor) ungroupOld() {
	g := &c.groups
	now := c.cfg.Clock.Now()
	g.due = time.Time{}
	for p, since := range g.since {
		if at := since.Add(groupWait); now.Before(at) {
			if g.due.IsZero() || at.Before(g.due) {
				g.due = at
			}
			continue
		}
		for _, q := range g.behind[p] {
			delete(c.waiting, q)
			g.single[q] = true
		}
		delete(g.behind, p)
		delete(g.since, p)
		c.dirty = true
	}
	if !g.due.IsZero() {
		g.timer.Reset(g.due.Sub(now))
	}
}
