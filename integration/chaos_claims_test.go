package integration_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The faults delete-claim-handoff and delete-claim-steady delete a claim,
// owners/<topic>:<id>, from outside, as an operator who sees a stuck
// hand-off in `zkalloc status` might (issue 24, item 1).
//
// delete-claim-handoff deletes the claim of a partition that is being
// handed off: its old owner has revoked it and waits for its consumer's
// Ack, and the next owner lists it in Pending. It makes the hand-off: a
// member leaves and joins again, and the others, whose consumers are
// slow to stop what they revoke (chaosSlowAck), hand its share over to
// it. (A member that leaves gives no such window: it keeps its member
// node, so the others do not recompute, until it has released its
// claims.) The next owner must not take the partition before the old
// owner's consumer has acked: the history checker's (a) tells.
//
// delete-claim-steady deletes a claim of a partition its owner holds in a
// converged group. The owner must revoke the partition (its consumer
// receives an Update without it) within chaosClaimRevoke, and the
// partition must be owned again, by anyone, within chaosClaimOwned of
// the delete; the owner must not go on listing a partition whose claim is
// gone, which any view change could hand to another member meanwhile.

const (
	chaosSlowAck     = 1200 * time.Millisecond // a consumer's time to stop what a hand-off revokes, during these faults
	chaosClaimRevoke = chaosTimeout + 2*time.Second
	chaosClaimOwned  = 2*chaosTimeout + 3*time.Second
	chaosPendingWait = 3 * time.Second // how long to look for a partition pending in a hand-off
)

// claimCheck is what one delete-claim-steady fault found.
type claimCheck struct {
	p                 zkalloc.Partition
	holder            string
	deleted           time.Time
	revoked, owned    time.Time // zero if not seen in time
	revokeOK, ownedOK bool
}

func (c *chaos) claimPath(p zkalloc.Partition) string {
	return zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Owners() + "/" + p.String()
}

// deleteClaim deletes p's claim, whoever holds it; it reports whether
// there was one to delete, and whose it was (the claim's data). It may
// run on any goroutine.
func (c *chaos) deleteClaim(p zkalloc.Partition) (holder string, ok bool) {
	path := c.claimPath(p)
	data, stat, err := c.obs.Get(path)
	if err != nil {
		return "", false
	}
	err = c.obs.Delete(path, stat.Version)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		c.t.Errorf("delete %s: %v", path, err)
	}
	return string(data), err == nil
}

// deleteClaimHandoff runs one delete-claim-handoff fault: a member
// leaves and joins again, and while the others hand its share over to
// it, slowly, one of the claims it waits for is deleted.
func (c *chaos) deleteClaimHandoff() {
	x := c.pick()
	c.stop(x, stopGraceful, true)
	c.pause(0, 300*time.Millisecond)
	live := c.live()
	for _, m := range live {
		m.slowAck.Store(int64(chaosSlowAck))
	}
	defer func() {
		for _, m := range live {
			m.slowAck.Store(0)
		}
	}()
	// The deletes run on a goroutine of their own, the start on the
	// test's.
	deleted := make(chan string, 1)
	go func() { deleted <- c.deletePending("", x.name) }()
	c.start(x)
	c.t.Logf("delete-claim-handoff: %s joined again; deleted %s", x.name, <-deleted)
}

// deletePending looks, for up to chaosPendingWait, for a partition that a
// live member (other than from, or only pending, if set) lists in Pending
// while its claim is held by another member (from, if set), and deletes
// that claim. It returns what it deleted, or "nothing". It may run on any
// goroutine.
func (c *chaos) deletePending(from, pending string) string {
	deadline := time.Now().Add(chaosPendingWait)
	for time.Now().Before(deadline) {
		for _, m := range c.live() {
			if pending != "" && m.name != pending || m.name == from {
				continue
			}
			m.mu.Lock()
			alloc := m.alloc
			m.mu.Unlock()
			if alloc == nil {
				continue
			}
			for _, p := range alloc.Current().Pending {
				data, _, err := c.obs.Get(c.claimPath(p))
				if err != nil || string(data) == m.name || from != "" && string(data) != from {
					continue
				}
				if holder, ok := c.deleteClaim(p); ok {
					return fmt.Sprintf("%s (held by %s, pending at %s)", p, holder, m.name)
				}
			}
		}
		time.Sleep(5 * time.Millisecond) // polling for a hand-off under way, not waiting for one to settle
	}
	return "nothing"
}

// deleteClaimSteady runs one delete-claim-steady fault.
func (c *chaos) deleteClaimSteady() {
	c.waitConverged()
	var candidates []zkalloc.Partition
	for _, m := range c.live() {
		m.mu.Lock()
		candidates = append(candidates, m.last.Assigned...)
		m.mu.Unlock()
	}
	if len(candidates) == 0 {
		return
	}
	slices.SortFunc(candidates, rebalance.Compare)
	p := candidates[c.rng.IntN(len(candidates))]
	holder, ok := c.deleteClaim(p)
	if !ok {
		return
	}
	check := claimCheck{p: p, holder: holder, deleted: time.Now()}
	// The holder must revoke p, then anyone must own it again.
	deadline := check.deleted.Add(max(chaosClaimRevoke, chaosClaimOwned))
	for time.Now().Before(deadline) && (check.revoked.IsZero() || check.owned.IsZero()) {
		h := c.rec.History()
		if check.revoked.IsZero() {
			check.revoked = revokedAfter(h, holder, p, check.deleted)
		}
		if !check.revoked.IsZero() && check.owned.IsZero() {
			check.owned = ownedAfter(h, p, check.revoked)
		}
		time.Sleep(20 * time.Millisecond) // polling the history, which has no wake-up
	}
	check.revokeOK = !check.revoked.IsZero() && check.revoked.Sub(check.deleted) <= chaosClaimRevoke
	check.ownedOK = !check.owned.IsZero() && check.owned.Sub(check.deleted) <= chaosClaimOwned
	c.claimChecks = append(c.claimChecks, check)
}

// revokedAfter returns when member's consumer first received, after t,
// an Update not assigning p (or stopped); zero if it has not.
func revokedAfter(h history.History, member string, p zkalloc.Partition, t time.Time) time.Time {
	for _, e := range h.Events {
		if e.Member != member || !e.Time.After(t) {
			continue
		}
		if e.Kind == history.KindClosed || e.Kind == history.KindReceived && !slices.Contains(e.Assigned, p) {
			return e.Time
		}
	}
	return time.Time{}
}

// ownedAfter returns when, after t, some member's consumer first received
// an Update assigning p; zero if none has.
func ownedAfter(h history.History, p zkalloc.Partition, t time.Time) time.Time {
	for _, e := range h.Events {
		if e.Kind == history.KindReceived && e.Time.After(t) && slices.Contains(e.Assigned, p) {
			return e.Time
		}
	}
	return time.Time{}
}

// checkClaims fails the test for every delete-claim-steady fault whose
// claim's holder did not revoke it, or whose partition was not owned
// again, in time, and summarizes them.
func (c *chaos) checkClaims() (revokeMax time.Duration) {
	for _, k := range c.claimChecks {
		switch {
		case !k.revokeOK:
			c.t.Errorf("seed %d: %s's claim of %s, deleted at %s, not revoked by it within %v (revoked at %v)",
				c.seed, k.holder, k.p, k.deleted.Format("15:04:05.000"), chaosClaimRevoke, since(k.revoked, k.deleted))
		case !k.ownedOK:
			c.t.Errorf("seed %d: %s, its claim deleted at %s and revoked by %s after %v, not owned again within %v of the delete (owned at %v)",
				c.seed, k.p, k.deleted.Format("15:04:05.000"), k.holder, k.revoked.Sub(k.deleted).Round(time.Millisecond), chaosClaimOwned, since(k.owned, k.deleted))
		default:
			revokeMax = max(revokeMax, k.revoked.Sub(k.deleted))
		}
	}
	return revokeMax
}

// since renders t relative to from, or "never".
func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(from).Round(time.Millisecond).String()
}
