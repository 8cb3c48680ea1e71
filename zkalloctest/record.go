package zkalloctest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// record is the sticky strategy's agreed record, kept in the group as
// ZooKeeper keeps a real group's: the placement and the views it was
// computed for.
type record struct {
	have                        bool
	membersZxid, partitionsZxid int64
	placement                   rebalance.Placement
	weights                     map[string]int // the members' weights it was computed with
}

// recordAssigner stands for the record runner (internal/record): it
// answers a job from a record computed for exactly the job's views,
// computing the next one over the record when the job's views are newer,
// and waits when they are older. With one lock over the group there is
// no race to settle: the first member to come computes.
type recordAssigner struct {
	m      *Member
	writes atomic.Uint64 // records this member computed, for Stats.RecordWrites
}

// RecordCounts says how many records this member wrote, as the runner's
// does (Stats.RecordWrites). With one lock over the group, no write is
// ever lost to another.
func (a *recordAssigner) RecordCounts() (writes, conflicts uint64) { return a.writes.Load(), 0 }

func (a *recordAssigner) Assign(ctx context.Context, job decision.Job) ([]rebalance.Partition, error) {
	m, g := a.m, a.m.g
	for {
		g.mu.Lock()
		r := g.record
		switch {
		case r.have && r.membersZxid == job.MembersZxid && r.partitionsZxid == job.PartitionsZxid:
			mine := r.placement.Owners()[m.name]
			g.mu.Unlock()
			return mine, nil
		case r.have && (r.membersZxid > job.MembersZxid || r.partitionsZxid > job.PartitionsZxid):
			// This member's views are older than the record's: newer
			// ones are on their way, with a newer job.
			ch := g.changed
			g.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		next, err := nextRecord(r, job)
		if err != nil {
			g.mu.Unlock()
			return nil, err
		}
		g.record = next
		g.change()
		g.mu.Unlock()
		a.writes.Add(1)
		return next.placement.Owners()[m.name], nil
	}
}

// nextRecord computes the record for job's views over r, as the record
// runner does (decision.Job.StickyNext).
func nextRecord(r record, job decision.Job) (record, error) {
	res, members, err := job.StickyNext(r.placement, r.have, func(name string) (int, bool) {
		w, ok := r.weights[name]
		return w, ok
	})
	if err != nil {
		return record{}, err
	}
	weights := make(map[string]int, len(members))
	for _, m := range members {
		weights[m.Name] = m.Weight
	}
	return record{have: true, membersZxid: job.MembersZxid, partitionsZxid: job.PartitionsZxid, placement: res.Next, weights: weights}, nil
}

// Drain marks member drained, as `zkalloc drain` does: the sticky
// strategy moves all its partitions to the others with the usual
// hand-off, and gives it none until [Group.Undrain]. The mark outlives
// the member's sessions. It returns an error for a name that is neither
// a member with a session nor drained already, or if it would leave no
// member to take the partitions; draining a drained member does nothing.
func (g *Group) Drain(member string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, found := slices.BinarySearch(g.drained, member); found {
		return nil
	}
	if _, ok := g.registered[member]; !ok {
		return fmt.Errorf("zkalloctest: drain %q: no such member", member)
	}
	left := 0
	for _, name := range g.names {
		if _, drained := slices.BinarySearch(g.drained, name); !drained && name != member {
			left++
		}
	}
	if left == 0 {
		return fmt.Errorf("zkalloctest: drain %q: no other member would take its partitions", member)
	}
	g.drained = append(slices.Clone(g.drained), member)
	slices.Sort(g.drained)
	g.drainedZxid = g.tick()
	g.change()
	return nil
}

// Undrain removes member's drain mark: it gets a share again, taken
// only from members above theirs. Undraining a member that is not
// drained does nothing.
func (g *Group) Undrain(member string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearch(g.drained, member)
	if !found {
		return
	}
	g.drained = slices.Delete(slices.Clone(g.drained), i, i+1)
	g.drainedZxid = g.tick()
	g.change()
}

// Record returns the group's agreed record as every member's partitions
// by name, and false if there is none (a stateless strategy, or no
// member has computed yet).
func (g *Group) Record() (map[string][]zkalloc.Partition, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.record.have {
		return nil, false
	}
	return g.record.placement.Owners(), true
}
