package integration_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
)

// TestStickyRollingRestart restarts each of 5 members of a group of 60
// partitions in turn (Close, then a new Allocator of the same name and
// Start), with the default configuration. Without DepartureDelay the
// group converges without the member before it comes back: every
// partition that changes owner while it is away, or when it is back, must
// be one of its own, and back it owns exactly what it owned before, so
// that after the whole rollout everyone owns what it did at the start.
// With a DepartureDelay longer than a restart nothing changes owner at
// all: the others take nothing over, and the member gets its own back.
func TestStickyRollingRestart(t *testing.T) {
	srv := server(t)
	for _, delay := range []time.Duration{0, 5 * time.Second} {
		t.Run(fmt.Sprintf("delay=%v", delay), func(t *testing.T) {
			rollingRestart(t, srv.Addr(), delay)
		})
	}
}

func rollingRestart(t *testing.T, addr string, delay time.Duration) {
	const members, partitions = 5, 60
	group := fmt.Sprintf("sticky-rolling-%v", delay)
	all := make([]zkalloc.Partition, partitions)
	for i := range all {
		all[i] = zkalloc.Partition{Topic: "t", ID: int32(i)}
	}
	wake := make(chan struct{}, 1) // one slot: some consumer received an Update
	cfg := func(name string) zkalloc.Config {
		return zkalloc.Config{
			Servers:        []string{addr},
			Group:          group,
			Member:         name,
			Partitions:     map[string][]int32{"t": ids(partitions)},
			DepartureDelay: delay,
			Logger:         testLogger(),
		}
	}
	names := make([]string, members)
	ms := make([]*stickyMember, members)
	for i := range names {
		names[i] = fmt.Sprintf("m%d", i)
		ms[i], _ = startSticky(t, cfg(names[i]), wake)
	}
	start := awaitSticky(t, wake, ms, names, all, nil)
	cur := start
	for i, name := range names {
		own := cur.count()[name]
		others := slices.Delete(slices.Clone(ms), i, i+1)
		from := make([]int, len(others))
		for j, o := range others {
			from[j] = o.received()
		}
		closed := time.Now()
		ms[i].close()
		var away time.Duration
		if delay == 0 {
			// The group converges without it: only its own move, to
			// the others.
			s := awaitSticky(t, wake, others, slices.Delete(slices.Clone(names), i, i+1), all, nil)
			away = s.last.Sub(closed)
			for p, o := range s.owner {
				if was := cur.owner[p]; o != was && was != name {
					t.Errorf("%s away: %s moved from %s to %s", name, p, was, o)
				}
			}
		}
		var began time.Time
		ms[i], began = startSticky(t, cfg(name), wake)
		s := awaitSticky(t, wake, ms, names, all, nil)
		if took := time.Since(closed); delay > 0 && took >= delay {
			t.Fatalf("%s's restart took %v, not shorter than the delay %v: the test proves nothing", name, took, delay)
		}
		if !maps.Equal(s.owner, cur.owner) {
			t.Errorf("after %s's restart %d partitions have another owner than before; owned before %v, now %v",
				name, moved(cur.owner, s.owner), cur.count(), s.count())
		}
		// What the others received meanwhile, intermediate Updates
		// included: only the restarted member's own partitions, and
		// nothing with a delay.
		for j, o := range others {
			for _, u := range o.since(from[j]) {
				for _, p := range u.u.Added {
					if delay > 0 || cur.owner[p] != name {
						t.Errorf("%s's restart: %s took %s over (was %s's; %s)", name, o.name, p, cur.owner[p], u.u.Reason)
					}
				}
			}
		}
		if delay == 0 {
			t.Logf("restart of %s (%d partitions): converged without it in %v, with it again %v after its Start",
				name, own, away.Round(time.Millisecond), s.last.Sub(began).Round(time.Millisecond))
		} else {
			t.Logf("restart of %s (%d partitions): back %v after its Close, converged %v after its Start",
				name, own, time.Since(closed).Round(time.Millisecond), s.last.Sub(began).Round(time.Millisecond))
		}
		cur = s
	}
	if !maps.Equal(cur.owner, start.owner) {
		t.Errorf("after the rollout %d partitions have another owner than at the start", moved(start.owner, cur.owner))
	}
}
