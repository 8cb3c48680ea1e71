package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/rebalance"
)

// readHead reads the head of the group's assignment record; ok is false
// if there is none. An unreadable head is an error wrapping
// assignment.ErrInvalid, or assignment.ErrNewerFormat for one a later
// zkalloc wrote.
func readHead(c *client) (h assignment.Head, ok bool, err error) {
	data, _, err := c.conn.Get(c.paths.Assignment())
	if errors.Is(err, zk.ErrNoNode) {
		return assignment.Head{}, false, nil
	}
	if err != nil {
		return assignment.Head{}, false, err
	}
	h, err = assignment.DecodeHead(data)
	if err != nil {
		return assignment.Head{}, false, fmt.Errorf("the assignment record's head %s: %w", c.paths.Assignment(), err)
	}
	return h, true, nil
}

// errRecordMoved is recordTarget's error when the head changed under
// it too often: a share it names was deleted before it was read.
var errRecordMoved = errors.New("the assignment record changed while it was read")

// maxRecordReads bounds how often recordTarget reads the record again
// when a newer one replaced it while it read.
const maxRecordReads = 3

// recordTarget reads the shares the record's head names and returns the
// partitions the record gives each member: whom the sticky strategy
// says should own each partition. A share node is deleted only after a
// newer head no longer names it, so a share found gone means a newer
// head: it reads that one, at most maxRecordReads times in all.
func recordTarget(c *client, head assignment.Head) (map[string][]rebalance.Partition, error) {
	for range maxRecordReads {
		var entries []assignment.Entry
		for _, e := range head.Members {
			if e.Node != "" {
				entries = append(entries, e)
			}
		}
		reads := make([]nodeRead, len(entries))
		inflight.Do(len(entries), func(i int) {
			reads[i].data, _, reads[i].err = c.conn.Get(c.paths.Share(entries[i].Node))
		})
		target := map[string][]rebalance.Partition{}
		moved := false
		for i, e := range entries {
			r := reads[i]
			if errors.Is(r.err, zk.ErrNoNode) {
				moved = true
				break
			}
			if r.err != nil {
				return nil, r.err
			}
			sh, err := assignment.DecodeShare(e, r.data)
			if err != nil {
				return nil, fmt.Errorf("%s's share %s: %w", e.Name, e.Node, err)
			}
			target[e.Name] = sh.Owned
		}
		if !moved {
			return target, nil
		}
		h, ok, err := readHead(c)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, errRecordMoved
		}
		head = h
	}
	return nil, errRecordMoved
}

// stickyTarget is the target of a group whose members run the sticky
// strategy: the partitions of the set that the record gives each
// member. If the record is not computed for the members and set read
// (it gives a partition to a name that is neither a live member nor a
// seat, or has no owner for a partition of the set: the members are
// computing the next one, or cannot), the target is nil and why says so.
func stickyTarget(c *client, head assignment.Head, set []rebalance.Partition, live map[string]bool, seats []string) (target map[string][]rebalance.Partition, why string, err error) {
	rec, err := recordTarget(c, head)
	if errors.Is(err, errRecordMoved) || errors.Is(err, assignment.ErrInvalid) || errors.Is(err, assignment.ErrStale) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	inSet := make(map[rebalance.Partition]bool, len(set))
	for _, p := range set {
		inSet[p] = true
	}
	target = map[string][]rebalance.Partition{}
	placed := 0
	for name, ps := range rec {
		for _, p := range ps {
			if !inSet[p] {
				continue // removed from the set since: it simply goes
			}
			if !live[name] && !slices.Contains(seats, name) {
				return nil, fmt.Sprintf("the assignment record (generation %d) gives partitions to %s, which is neither a live member nor a seat: the members have not computed the next record yet", head.Generation, name), nil
			}
			target[name] = append(target[name], p)
			placed++
		}
	}
	if placed < len(set) {
		return nil, fmt.Sprintf("the assignment record (generation %d) does not place %d partitions of the set: the members have not computed the next record yet", head.Generation, len(set)-placed), nil
	}
	return target, "", nil
}
