package record

import (
	"context"
	"fmt"
	"slices"

	"github.com/zkalloc/zkalloc/assignment"
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
	if !ok && r.head != nil {
		// A broken record: go on from its generation, so that its nodes
		// are orphans.
		prevHead.Generation = r.head.Generation
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// With no record (or while members run balanced: a rolling upgrade)
	// it starts from Balanced's assignment of the views.
	res, members, err := c.job.StickyNext(prev, ok, headWeight(r.head))
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
		r.reread = true // moved, or unknown: read it again, whatever the watch
		return nil, err
	}
	r.counts.writes.Add(1)
	for _, n := range enc.Create {
		r.data[n.Name] = n.Data
	}
	r.keepNamed(enc.Head)
	r.placement, r.placementOf = res.Next, enc.HeadData
	r.startAfter(enc.Head, enc.Stale)
	mine := res.Of(r.cfg.Member)
	r.mineNode, r.mine = "", nil
	if e, ok := enc.Head.Of(r.cfg.Member); ok && e.Node != "" {
		r.mineNode, r.mine = e.Node, mine
	}
	c.outcome = fmt.Sprintf("computed generation %d: moved %d, created %d share nodes", enc.Head.Generation, res.Moved, len(enc.Create))
	if len(c.job.Balanced) > 0 {
		c.outcome += fmt.Sprintf(" (balanced's assignment: %d members run it)", len(c.job.Balanced))
	}
	return slices.Clone(mine), nil
}

// headWeight gives the weight head's entry gives a member, for the
// seats a job does not weigh (nil if there is no head).
func headWeight(head *assignment.Head) func(name string) (int, bool) {
	if head == nil {
		return nil
	}
	return func(name string) (int, bool) {
		e, ok := head.Of(name)
		return e.Weight, ok
	}
}
