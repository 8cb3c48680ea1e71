package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// The faults blackhole-quorum and partition-follower cut a follower off
// from its leader: its quorum link goes dark while its clients still reach
// it. The follower goes on answering them for syncLimit ticks (5 s here),
// while the leader, hearing nothing of their sessions, expires them after
// the session timeout. A member connected to that follower must report
// Lost (its Updates revoke everything) before the leader expires its
// session: the members elsewhere take its partitions once it has.
//
// With blackhole-quorum the members on that follower may move to another
// server, and they do: a ping queued behind a sync the follower cannot
// forward goes unanswered, and the client gives up on the connection
// after 2/3 of the session timeout, in time to resume the session
// elsewhere. partition-follower is the partition that leaves them no way
// out: the follower and the members connected to it on one side, the
// other servers on the other, so that the leader expires their sessions.

const (
	chaosTick      = 500 * time.Millisecond
	chaosSyncLimit = 10 // ticks: the follower answers by itself for 5 s
	chaosMinCut    = time.Second
	chaosMaxCut    = 6 * time.Second
	chaosCutPoll   = 25 * time.Millisecond
)

// quorumCut is what one blackhole-quorum fault did to one member connected
// to the cut-off follower.
type quorumCut struct {
	member  string
	cut     time.Time // when the link went dark
	session int64     // the member's session, as the leader listed its node; 0 if it did not
	// lost is the first poll that found its Current().Assigned empty;
	// expired the first that found its node gone from the leader (or
	// owned by another session) and present the last poll before that.
	// Zero if not seen.
	lost, expired, present time.Time
}

// cutQuorum runs one blackhole-quorum fault, or with partition one
// partition-follower fault: it cuts off the follower to which more members
// are connected, for chaosMinCut to chaosMaxCut, and meanwhile polls the
// leader's ephemeral nodes and the cut-off members' Current.
func (c *chaos) cutQuorum(ctx context.Context, partition bool) {
	// Drawn first, whatever the servers say, so that a replay draws the
	// same numbers.
	coin := c.rng.IntN(2)
	d := chaosMinCut + time.Duration(c.rng.Int64N(int64(chaosMaxCut-chaosMinCut)))
	// Every server serving first, so that the cut leaves a quorum.
	if err := c.ens.StartAll(ctx); err != nil {
		c.t.Fatal(err)
	}
	leader, err := c.ens.Leader(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	addrs := c.ens.Addrs()
	on := make([][]*chaosMember, len(addrs)) // members by the one server they are connected to
	for _, m := range c.live() {
		conns := m.proxy.Conns()
		open := 0
		for _, n := range conns {
			open += min(n, 1)
		}
		if open == 1 {
			i := slices.IndexFunc(conns, func(n int) bool { return n > 0 })
			on[i] = append(on[i], m)
		}
	}
	f1, f2 := (leader+1)%3, (leader+2)%3
	follower := f1
	if len(on[f2]) > len(on[f1]) || len(on[f2]) == len(on[f1]) && coin == 0 {
		follower = f2
	}
	before, err := zktest.Ephemerals(ctx, addrs[leader])
	if err != nil {
		c.t.Fatalf("leader's ephemerals: %v", err)
	}
	cuts := make([]*quorumCut, len(on[follower]))
	allocs := make([]*zkalloc.Allocator, len(on[follower]))
	paths := make([]string, len(on[follower]))
	for i, m := range on[follower] {
		m.mu.Lock()
		allocs[i] = m.alloc
		m.mu.Unlock()
		paths[i] = zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Member(m.name)
		cuts[i] = &quorumCut{member: m.name, session: before[paths[i]]}
	}

	cut := time.Now()
	if err := c.ens.BlackholeQuorum(follower, true); err != nil {
		c.t.Fatal(err)
	}
	for _, q := range cuts {
		q.cut = cut
	}
	c.isolate(on[follower], follower, partition)
	tick := time.NewTicker(chaosCutPoll)
	for now := cut; now.Sub(cut) < d; now = <-tick.C {
		for i, q := range cuts {
			if q.lost.IsZero() && len(allocs[i].Current().Assigned) == 0 {
				q.lost = time.Now()
			}
		}
		if slices.ContainsFunc(cuts, func(q *quorumCut) bool { return q.session != 0 && q.expired.IsZero() }) {
			polled := time.Now()
			eph, err := zktest.Ephemerals(ctx, addrs[leader])
			if err != nil {
				continue // the next poll will tell
			}
			for i, q := range cuts {
				switch {
				case q.session == 0 || !q.expired.IsZero():
				case eph[paths[i]] == q.session:
					q.present = polled
				default:
					q.expired = time.Now()
				}
			}
		}
	}
	tick.Stop()
	if err := c.ens.BlackholeQuorum(follower, false); err != nil {
		c.t.Fatal(err)
	}
	c.isolate(on[follower], follower, false)
	var b strings.Builder
	for _, q := range cuts {
		c.cuts = append(c.cuts, *q)
		fmt.Fprintf(&b, " %s", q.member)
		if !q.lost.IsZero() {
			fmt.Fprintf(&b, " lost +%v", q.lost.Sub(cut).Round(time.Millisecond))
		}
		if !q.expired.IsZero() {
			fmt.Fprintf(&b, " expired +%v", q.expired.Sub(cut).Round(time.Millisecond))
		}
		b.WriteString(";")
	}
	c.t.Logf("cut off server %d (leader %d) for %v, partitioned with its members %v; on it:%s",
		follower, leader, d.Round(time.Millisecond), partition, b.String())
}

// isolate cuts the members ms off from every server but the follower (on),
// or restores their links (off).
func (c *chaos) isolate(ms []*chaosMember, follower int, on bool) {
	for _, m := range ms {
		for i := range c.ens.Addrs() {
			if i != follower {
				m.proxy.BlackholeTarget(i, on)
			}
		}
	}
}

// checkCuts checks that every member cut off with a follower reported
// Lost before the leader expired its session, and summarizes the cuts.
// A member reports Lost by its Current, or by the Update revoking
// everything that its consumer received; either time is no sooner than
// the allocator's own.
func (c *chaos) checkCuts(h history.History) {
	expired, margin := 0, time.Duration(-1)
	for _, q := range c.cuts {
		if q.expired.IsZero() {
			continue
		}
		expired++
		lost := q.lost
		for _, e := range h.Events {
			if e.Member == q.member && e.Kind == history.KindReceived && e.Time.After(q.cut) && len(e.Assigned) == 0 {
				if lost.IsZero() || e.Time.Before(lost) {
					lost = e.Time
				}
				break
			}
		}
		switch {
		case lost.IsZero() || lost.After(q.expired):
			c.t.Errorf("%s, cut off with its follower at %v, still listed partitions when the leader had expired its session (node gone at +%v, present at +%v; lost %v)",
				q.member, q.cut.Format("15:04:05.000"), q.expired.Sub(q.cut).Round(time.Millisecond), q.present.Sub(q.cut).Round(time.Millisecond), lost)
		case margin < 0 || q.present.Sub(lost) < margin:
			margin = q.present.Sub(lost)
		}
	}
	n := 0
	for _, f := range h.Faults {
		if f.Kind == "blackhole-quorum" || f.Kind == "partition-follower" {
			n++
		}
	}
	c.t.Logf("%d followers cut off; %d members on them, %d expired by the leader meanwhile, each Lost before; least margin from Lost to the leader's last listing of its node %v",
		n, len(c.cuts), expired, margin.Round(time.Millisecond))
}
