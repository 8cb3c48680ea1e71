package integration_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// The fault isolate-leader cuts an ensemble's LEADER off from the other
// servers, together with some members, while those members' clients can
// reach only it (issue 24, item 3). A deposed leader goes on answering
// its own clients, syncs included, until its syncLimit has passed
// without a quorum of acknowledgements, while the others elect a new
// leader, whose session tracker starts every session's expiry clock from
// its own start: it expires the isolated members' sessions T after it
// took over, and the members on its side then take their partitions. An
// isolated member must have revoked them all (reported Lost) before:
// what the old leader tells it proves nothing once a new one may lead.
//
// It runs on an ensemble and a group of its own (the leader group:
// chaosLeaderMembers members, half of them with DisconnectGrace, which
// keeps a disconnected member's partitions until its lease ends), because
// it needs syncLimit 2, a common production setting, where the main
// ensemble runs with syncLimit 10 for its followers' faults: a follower
// cut off from its leader must go on answering for longer than the
// session timeout for those faults to test the lease. Each fault picks
// how the leader is cut off:
//
//   - isolated (zktest's Ensemble.Isolate): its quorum and election links
//     go silent both ways. Its followers notice after syncLimit ticks and
//     elect a new leader at about the time it gives up itself.
//   - rejected (Ensemble.Reject), two times in three: a firewall on its
//     host rejects what its peers send (they get resets) and drops what
//     it sends. Its peers notice at once and elect a new leader within a
//     moment, while it answers its clients for up to (syncLimit+1) ticks
//     more. This is the cut that deposes a leader for longest.
//
// The checks: the leader group's own history must show no double
// ownership, and each isolated member must report Lost (its Current
// lists nothing, or its consumer receives the Update revoking
// everything) before the new leader ends its session (its member node
// gone, as a majority server lists them) and before a member on the
// majority lists one of its partitions. The summary gives the least
// margin from Lost to either.

const (
	chaosLeaderMembers = 4
	chaosLeaderGrace   = 10 * time.Second // DisconnectGrace of half the leader group: the lease ends it
	chaosLeaderSync    = 2                // the leader ensemble's syncLimit, in ticks
	chaosLeaderCut     = 8 * time.Second  // the most an isolation lasts
	chaosLeaderPoll    = 10 * time.Millisecond
)

// leaderCut is what one isolate-leader fault did to one isolated member.
type leaderCut struct {
	member   string
	grace    bool
	oneSided bool
	cut      time.Time
	had      []zkalloc.Partition
	// lost, expired and taken are when, polled, its Current first listed
	// nothing, its member node was first gone from a majority server (or
	// owned by another session), and a member on the majority first
	// listed one of its partitions; zero if not seen.
	lost, expired, taken time.Time
}

// newLeaderGroup starts the leader group's ensemble and members.
func newLeaderGroup(main *chaos) *chaos {
	t := main.t
	ens := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: chaosTick, SyncLimit: chaosLeaderSync, QuorumProxies: true})
	obs, _, err := zk.Connect(ens.Addrs(), chaosTimeout, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(obs.Close)
	l := &chaos{
		t:        t,
		ens:      ens,
		obs:      obs,
		rng:      main.rng,
		seed:     main.seed,
		rec:      history.NewRecorder(nil),
		group:    "chaos-leader",
		strategy: main.strategy,
		set:      map[zkalloc.Partition]bool{},
	}
	for id := range int32(12) {
		l.set[zkalloc.Partition{Topic: "l", ID: id}] = true
	}
	l.rec.Expect(l.expected())
	for i := range chaosLeaderMembers {
		m := &chaosMember{
			idx:      i,
			name:     fmt.Sprintf("l%d", i),
			proxy:    zktest.StartProxy(t, ens.Addrs()...),
			strategy: newStallingStrategy(main.strategy),
		}
		if i%2 == 0 {
			m.grace = chaosLeaderGrace
		}
		l.members = append(l.members, m)
	}
	return l
}

// isolateLeader runs one isolate-leader fault on the leader group l.
func (c *chaos) isolateLeader(l *chaos) {
	// Drawn first, whatever the servers say, so that a replay draws the
	// same numbers.
	oneSided := c.rng.IntN(3) != 0
	graceIdx := 2 * c.rng.IntN(chaosLeaderMembers/2)
	otherIdx := (graceIdx + 1 + c.rng.IntN(chaosLeaderMembers-1)) % chaosLeaderMembers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	if err := l.ens.StartAll(ctx); err != nil {
		c.t.Fatal(err)
	}
	leader, err := l.ens.Leader(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	addrs := l.ens.Addrs()
	majority := (leader + 1) % len(addrs)
	var iso, rest []*chaosMember
	for i, m := range l.members {
		if i == graceIdx || i == otherIdx {
			iso = append(iso, m)
		} else {
			rest = append(rest, m)
		}
	}
	// Pin the isolated members to the leader and the others away from
	// it (refused, they move at once), and let the group settle.
	for _, m := range iso {
		for j := range addrs {
			m.proxy.RejectTarget(j, j != leader)
		}
	}
	for _, m := range rest {
		m.proxy.RejectTarget(leader, true)
	}
	defer func() {
		for _, m := range l.members {
			for j := range addrs {
				m.proxy.RejectTarget(j, false)
			}
		}
	}()
	waitFor(c.t, time.Minute, func() string {
		for _, m := range l.members {
			conns := m.proxy.Conns()
			on := 0
			for j, n := range conns {
				allowed := j == leader
				if !slices.Contains(iso, m) {
					allowed = j != leader
				}
				if n > 0 && !allowed {
					return fmt.Sprintf("%s still connected to server %d", m.name, j)
				}
				on += n
			}
			if on == 0 {
				return m.name + " not connected yet"
			}
		}
		return l.converged()
	})

	paths := make([]string, len(iso))
	cuts := make([]*leaderCut, len(iso))
	allocs := make([]*zkalloc.Allocator, len(iso))
	for i, m := range iso {
		paths[i] = zkpath.Group{Root: zkalloc.DefaultRoot, Group: l.group}.Member(m.name)
		m.mu.Lock()
		allocs[i] = m.alloc
		m.mu.Unlock()
		cuts[i] = &leaderCut{member: m.name, grace: m.grace > 0, oneSided: oneSided, had: allocs[i].Current().Assigned}
	}
	sessions, err := zktest.Ephemerals(ctx, addrs[majority])
	if err != nil {
		c.t.Fatalf("ephemerals: %v", err)
	}
	restAllocs := make([]*zkalloc.Allocator, len(rest))
	for i, m := range rest {
		m.mu.Lock()
		restAllocs[i] = m.alloc
		m.mu.Unlock()
	}

	pinned := time.Since(began)
	cutOff := l.ens.Isolate
	if oneSided {
		cutOff = l.ens.Reject
	}
	at := time.Now()
	if err := cutOff(leader, true); err != nil {
		c.t.Fatal(err)
	}
	for _, q := range cuts {
		q.cut = at
	}
	done := func() bool {
		for _, q := range cuts {
			if q.lost.IsZero() || q.expired.IsZero() || len(q.had) > 0 && q.taken.IsZero() {
				return false
			}
		}
		return true
	}
	tick := time.NewTicker(chaosLeaderPoll)
	for now := at; now.Sub(at) < chaosLeaderCut && !done(); now = <-tick.C {
		for i, q := range cuts {
			if q.lost.IsZero() && len(allocs[i].Current().Assigned) == 0 {
				q.lost = time.Now()
			}
			if q.taken.IsZero() {
				for _, a := range restAllocs {
					if slices.ContainsFunc(a.Current().Assigned, func(p zkalloc.Partition) bool { return slices.Contains(q.had, p) }) {
						q.taken = time.Now()
						break
					}
				}
			}
		}
		if slices.ContainsFunc(cuts, func(q *leaderCut) bool { return q.expired.IsZero() }) {
			eph, err := zktest.Ephemerals(ctx, addrs[majority])
			if err != nil {
				continue // not serving yet: the next poll will tell
			}
			for i, q := range cuts {
				if q.expired.IsZero() && eph[paths[i]] != sessions[paths[i]] {
					q.expired = time.Now()
				}
			}
		}
	}
	tick.Stop()
	if err := cutOff(leader, false); err != nil {
		c.t.Fatal(err)
	}
	var b strings.Builder
	for _, q := range cuts {
		l.leaderCuts = append(l.leaderCuts, *q)
		fmt.Fprintf(&b, " %s (grace %v): lost %s, session ended %s, taken over %s;", q.member, q.grace, since(q.lost, at), since(q.expired, at), since(q.taken, at))
	}
	how := "isolated"
	if oneSided {
		how = "rejected"
	}
	healing := time.Now()
	if err := l.ens.StartAll(ctx); err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("leader %d of the leader group %s at 0, with its members:%s (members pinned in %v, cut for %v, ensemble whole again in %v)",
		leader, how, b.String(), pinned.Round(time.Millisecond), healing.Sub(at).Round(time.Millisecond), time.Since(healing).Round(time.Millisecond))
}

// converged is waitConverged's condition, for one poll: "" once the
// members' newest Updates agree and split the expected set exactly.
func (c *chaos) converged() string {
	want := c.expected()
	var gen int64
	seen := map[zkalloc.Partition]string{}
	for i, m := range c.members {
		m.mu.Lock()
		alloc, u := m.alloc, m.last
		m.mu.Unlock()
		if alloc == nil {
			return m.name + " is down"
		}
		if cur := alloc.Current(); len(cur.Pending) > 0 {
			return fmt.Sprintf("%s has %v pending", m.name, cur.Pending)
		}
		if i == 0 {
			gen = u.Generation
		} else if u.Generation != gen {
			return fmt.Sprintf("%s at generation %d, %s at %d", m.name, u.Generation, c.members[0].name, gen)
		}
		if len(u.Members) != len(c.members)+len(c.procs) {
			return fmt.Sprintf("%s sees members %v", m.name, u.Members)
		}
		for _, p := range u.Assigned {
			if other, ok := seen[p]; ok {
				return fmt.Sprintf("%s assigned to %s and %s", p, other, m.name)
			}
			seen[p] = m.name
		}
	}
	if problem := c.procsConverged(gen, len(c.members)+len(c.procs), seen); problem != "" {
		return problem
	}
	for _, p := range want {
		if _, ok := seen[p]; !ok {
			return fmt.Sprintf("%s not assigned", p)
		}
	}
	if len(seen) != len(want) {
		return fmt.Sprintf("%d assigned, want %d", len(seen), len(want))
	}
	return ""
}

// checkLeaderCuts checks that every member isolated with a deposed leader
// reported Lost before its session ended and before another member
// listed its partitions, and returns the least margin from Lost to the
// earlier of the two (negative if one came first; 0 if none was
// measured) and how many members it measured.
func (c *chaos) checkLeaderCuts(h history.History) (margin time.Duration, n int) {
	for _, q := range c.leaderCuts {
		lost := q.lost
		for _, e := range h.Events {
			if e.Member == q.member && e.Kind == history.KindReceived && e.Time.After(q.cut) && len(e.Assigned) == 0 {
				if lost.IsZero() || e.Time.Before(lost) {
					lost = e.Time
				}
				break
			}
		}
		end := q.expired
		if !q.taken.IsZero() && (end.IsZero() || q.taken.Before(end)) {
			end = q.taken
		}
		if end.IsZero() {
			continue // its session outlived the cut: nothing to compare
		}
		if lost.IsZero() || !lost.Before(end) {
			c.t.Errorf("seed %d: %s (grace %v), cut off with the leader (one-sided %v) at %s, still listed %v when its session ended (%s) or another member took one of them (%s); Lost %s",
				c.seed, q.member, q.grace, q.oneSided, q.cut.Format("15:04:05.000"), q.had, since(q.expired, q.cut), since(q.taken, q.cut), since(lost, q.cut))
		}
		if !lost.IsZero() && (n == 0 || end.Sub(lost) < margin) {
			margin = end.Sub(lost)
		}
		n++
	}
	return margin, n
}
