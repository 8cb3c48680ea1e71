package record

import (
	"context"
	"fmt"
	"slices"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/rebalance"
)

// computeAndWrite computes the record that follows the head read for
// c's job, writes it, cleans up after it, and returns this member's
// share of it. It returns errAgain when another member wrote first.
func (r *Runner) computeAndWrite(ctx context.Context, c *call) ([]rebalance.Partition, error) {
	var prevHead assignment.Head
	var prev rebalance.Placement
	ok := false
	if r.head != nil {
		var err error
		if prev, ok, err = r.previous(c); err != nil {
			return nil, err
		}
		if ok {
			prevHead = *r.head
		}
	}
	upgrading := len(c.job.Balanced) > 0
	if !ok || upgrading {
		// While members run balanced (a rolling upgrade), the record
		// holds what they compute: Balanced's assignment, which Sticky
		// keeps as it is with every weight 1 and nobody drained.
		prev = bootstrap(c.job)
		if r.head != nil && !ok { // a broken record: go on from its generation, so that its nodes are orphans
			prevHead.Generation = r.head.Generation
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	members := stickyMembers(c.job, r.head)
	if upgrading {
		for i := range members {
			members[i].Weight, members[i].Drained = 1, false
		}
	}
	res, err := rebalance.Sticky(prev, members, c.job.Partitions)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	enc, err := assignment.Encode(assignment.Input{
		MembersZxid:    c.job.MembersZxid,
		PartitionsZxid: c.job.PartitionsZxid,
		Members:        members,
		Placement:      res.Next,
	}, prevHead)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := r.write(enc); err != nil {
		return nil, err
	}
	r.counts.writes.Add(1)
	for _, n := range enc.Create {
		r.data[n.Name] = n.Data
	}
	r.keepNamed(enc.Head)
	r.placement, r.placementOf = res.Next, enc.HeadData
	deleted := r.cleanup(enc.Head, enc.Stale)
	mine := res.Of(r.cfg.Member)
	r.mineNode, r.mine = "", nil
	if e, ok := enc.Head.Of(r.cfg.Member); ok && e.Node != "" {
		r.mineNode, r.mine = e.Node, mine
	}
	c.outcome = fmt.Sprintf("computed generation %d: moved %d, created %d share nodes, deleted %d", enc.Head.Generation, res.Moved, len(enc.Create), deleted)
	if upgrading {
		c.outcome += fmt.Sprintf(" (balanced's assignment: %d members run it)", len(c.job.Balanced))
	}
	return slices.Clone(mine), nil
}

// stickyMembers returns the members job's record is computed for: each
// of job.Members, with its weight in job if it is live, else (a seat,
// with DepartureDelay) the weight head (if any) gives it, else 1; and
// drained if job.Drained lists it.
func stickyMembers(job decision.Job, head *assignment.Head) []rebalance.Member {
	ms := make([]rebalance.Member, len(job.Members))
	for i, name := range job.Members {
		w := 1
		if _, live := slices.BinarySearch(job.Live, name); live {
			w = job.Weight(name)
		} else if head != nil {
			if e, ok := head.Of(name); ok {
				w = e.Weight
			}
		}
		_, drained := slices.BinarySearch(job.Drained, name)
		ms[i] = rebalance.Member{Name: name, Weight: w, Drained: drained}
	}
	return ms
}

// bootstrap is the placement a first record starts from: the one
// rebalance.Balanced gives job's members, so that a group that ran
// Balanced over the same views starts where it is and the first record
// moves nothing more than the minimum from there. An error (there is no
// member, say) gives the empty placement: Sticky then reports it.
func bootstrap(job decision.Job) rebalance.Placement {
	owned, err := rebalance.Balanced.Assign(job.Members, job.Partitions)
	if err != nil {
		return rebalance.Placement{}
	}
	pl, err := rebalance.PlacementFrom(owned)
	if err != nil {
		return rebalance.Placement{}
	}
	return pl
}
