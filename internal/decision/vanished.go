package decision

import (
	"log/slog"
	"slices"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Vanished claims. The claims actor lists in Held.Vanished the claims of
// this session that were deleted from outside (an operator, a script)
// while this session's hold record still stands. Nobody else can take
// such a partition until the record is released or the session ends; the
// claims actor does not list it as held, does not create its claim again
// while it is wanted, releases the record once it is no longer wanted,
// and claims it again, as any other, if it is wanted after that. So the
// core, for each vanished partition:
//
//  1. revokes it at once: it is not held, so not assigned;
//  2. keeps wanting it while the consumer may still work on it, as the
//     hand-off keeps any revoked partition (until an ack of an Update
//     received without it, or the release bounds), so that its record
//     keeps every other member off it, even if it is in the target;
//  3. then stops wanting it, even if it is in the target, so that the
//     claims actor releases its record, until a Held of the current
//     connection that answers a Want no older than the one that gave
//     it up no longer lists it; a Held that answers an older Want can
//     predate the release and says nothing of it;
//  4. then wants it again if it is in the target: a new claim, a new
//     token, and the partition is added again.
//
// It counts as a hand-off (Counters.HandoffsStarted and HandoffsDone), as
// one that ends when the record is released: the consumer must stop
// before anyone, this member too, takes the partition again.
//
// vanished maps each such partition to 0 while it is wanted (steps 1-2),
// and then to the Want.Seq that gave it up (step 3); a partition
// leaves the map at step 4, or with the session (its records end with
// it).

// noteVanished takes what a Held of the current connection says of
// vanished claims.
func (c *Core) noteVanished(h Held) {
	if len(h.Vanished) == 0 && len(c.vanished) == 0 ||
		h.SessionID != c.st.SessionID || h.Reconnects != c.st.Reconnects {
		return
	}
	var fresh []rebalance.Partition
	for _, p := range h.Vanished {
		if _, ok := c.vanished[p]; !ok {
			if c.vanished == nil {
				c.vanished = make(map[rebalance.Partition]uint64)
			}
			c.vanished[p] = 0
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		c.log(slog.LevelWarn, "zkalloc: claims of this member were deleted from outside while it held them; revoking the partitions, and claiming them again once the consumer has stopped them (never delete claim nodes)",
			"partitions", named(fresh), "count", len(fresh))
	}
	if len(c.vanished) == len(fresh) {
		return
	}
	var again []rebalance.Partition
	for p, dropped := range c.vanished {
		if _, still := slices.BinarySearchFunc(h.Vanished, p, rebalance.Compare); still {
			continue
		}
		if dropped == 0 {
			// Still wanted, and its claim back: the claims actor holds it
			// again (not expected: it does not create a vanished claim
			// while it is wanted), and the report is what counts.
			if _, held := slices.BinarySearchFunc(h.Partitions, p, rebalance.Compare); !held {
				continue
			}
		} else if h.Seq < dropped {
			continue // may predate the release
		}
		delete(c.vanished, p)
		again = append(again, p)
	}
	if len(again) > 0 {
		rebalance.Sort(again)
		c.log(slog.LevelDebug, "zkalloc: records of vanished claims released; they may be claimed again", "partitions", named(again), "count", len(again))
	}
}

// wantable returns the target less the vanished partitions: those are
// wanted only while in use (see vanished.go), by the hand-off.
func (c *Core) wantable() []rebalance.Partition {
	if len(c.vanished) == 0 {
		return c.target
	}
	out := make([]rebalance.Partition, 0, len(c.target))
	for _, p := range c.target {
		if _, ok := c.vanished[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// withVanished returns held, sorted, with the vanished partitions added:
// the claims the hand-off may keep for the consumer (their records stand
// until they are no longer wanted).
func (c *Core) withVanished(held []rebalance.Partition) []rebalance.Partition {
	if len(c.vanished) == 0 {
		return held
	}
	out := slices.Clone(held)
	for p := range c.vanished {
		if _, found := slices.BinarySearchFunc(held, p, rebalance.Compare); !found {
			out = append(out, p)
		}
	}
	rebalance.Sort(out)
	return out
}

// dropVanished records, for each vanished partition still counted as
// wanted that the newest Want no longer wants, that Want's Seq:
// from a Held answering it, a report that no longer lists it says its
// record is released.
func (c *Core) dropVanished() {
	for p, dropped := range c.vanished {
		if dropped != 0 {
			continue
		}
		if _, wanted := slices.BinarySearchFunc(c.lastWant, p, rebalance.Compare); !wanted {
			c.vanished[p] = c.desiredSeq
		}
	}
}
