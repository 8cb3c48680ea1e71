package decision

import (
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// core drives a Core synchronously, as the actor would, with nothing in
// between: every event is taken when it is sent, and what the core asks
// for is seen at once. It runs the strategy when asked, and with
// grantAll answers every Want with all its claims held.
type core struct {
	t        *testing.T
	c        *Core
	strategy rebalance.Strategy
	member   string
	grantAll bool
	now      time.Time
	pub      *Update // published and not delivered, the newest
	desired  *Want   // wanted and not taken by the test, the newest
	wake     time.Time
	logs     []Log
	expire   []membership.Seat // the newest seat expiry asked for, not taken by the test
}

type coreOptions struct {
	settle, releaseTimeout, grace time.Duration
	manualClaims                  bool // the test answers Want itself
	departureDelay                time.Duration
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCore(t *testing.T, member string, s rebalance.Strategy, opts coreOptions) *core {
	if opts.releaseTimeout == 0 {
		opts.releaseTimeout = time.Minute
	}
	cfg := Config{Member: member, Strategy: s.Name(), Settle: opts.settle, ReleaseTimeout: opts.releaseTimeout, DisconnectGrace: opts.grace, DepartureDelay: opts.departureDelay}
	return &core{t: t, c: NewCore(cfg, t0), strategy: s, member: member, grantAll: !opts.manualClaims, now: t0}
}

// drain carries out what the core asks for until it asks for nothing the
// harness answers itself.
func (h *core) drain() {
	for {
		r := h.c.Ready()
		h.logs = append(h.logs, r.Logs...)
		h.wake = r.Wake
		if r.Expire != nil {
			h.expire = r.Expire
		}
		if r.Publish != nil {
			h.pub = r.Publish
		}
		again := false
		if r.Want != nil {
			h.desired = r.Want
			if h.grantAll {
				h.c.ClaimsHeld(Held{SessionID: r.Want.SessionID, Reconnects: r.Want.Reconnects, Seq: r.Want.Seq, Partitions: r.Want.Partitions})
				again = true
			}
		}
		if r.Compute != nil {
			result, err := rebalance.Compute(h.strategy, r.Compute.Members, r.Compute.Partitions)
			h.c.Computed(*r.Compute, result[h.member], err)
			again = true
		}
		if !again {
			return
		}
	}
}

func (h *core) session(status session.Status, id int64, reconnects uint64) {
	h.c.SessionChanged(session.State{Status: status, SessionID: id, Reconnects: reconnects})
	h.drain()
}

func (h *core) up(id int64, reconnects uint64) { h.session(session.Up, id, reconnects) }

func (h *core) members(v membership.View) {
	h.c.MembersRead(v)
	h.drain()
}

func (h *core) parts(v partitions.View) {
	h.c.PartitionsRead(v)
	h.drain()
}

// grant answers d with the given claims held.
func (h *core) grant(d Want, held ...rebalance.Partition) {
	h.c.ClaimsHeld(Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Partitions: held})
	h.drain()
}

func (h *core) ack(u Update) {
	h.c.Acked(u.seq)
	h.drain()
}

// advance moves the time by d and ticks.
func (h *core) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.c.Tick(h.now)
	h.drain()
}

// next delivers the newest published Update to the consumer.
func (h *core) next() Update {
	h.t.Helper()
	if h.pub == nil {
		h.t.Fatal("no update published")
	}
	u := *h.pub
	h.pub = nil
	h.c.Delivered(u)
	h.drain()
	return u
}

// current returns the newest published Update without delivering it, as
// Current does.
func (h *core) current() Update {
	h.t.Helper()
	u, ok := h.c.Current()
	if !ok {
		h.t.Fatal("nothing published")
	}
	return u
}

// none checks that nothing was published since the last delivery.
func (h *core) none() {
	h.t.Helper()
	if h.pub != nil {
		h.t.Fatalf("unexpected update %+v", *h.pub)
	}
}

// nextDesired takes the newest Want.
func (h *core) nextDesired() Want {
	h.t.Helper()
	if h.desired == nil {
		h.t.Fatal("no Want")
	}
	d := *h.desired
	h.desired = nil
	return d
}

// noDesired checks that nothing new was wanted since the last taken.
func (h *core) noDesired(why string) {
	h.t.Helper()
	if h.desired != nil {
		h.t.Fatalf("Want %v %s", h.desired.Partitions, why)
	}
}

// settled brings a manual-claims harness to a first assignment of members
// over t:0..n-1 with every wanted claim granted, and delivers it.
func (h *core) settled(members []string, n int32) Update {
	h.t.Helper()
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	h.up(1, 1)
	h.members(view(1, 1, 2, members...))
	h.parts(parts(1, 1, 3, ids...))
	d := h.nextDesired()
	h.grant(d, d.Partitions...)
	return h.next()
}

// view is a member view read in session sid after reconnects.
func view(sid int64, reconnects uint64, zxid int64, members ...string) membership.View {
	return membership.View{Members: members, Zxid: zxid, SessionID: sid, Reconnects: reconnects}
}

// parts is a view of topic t's partitions ids, read like view.
func parts(sid int64, reconnects uint64, zxid int64, ids ...int32) partitions.View {
	return partitions.View{Partitions: actortest.Parts("t", ids...), Zxid: zxid, SessionID: sid, Reconnects: reconnects}
}

func eq(a, b []rebalance.Partition) bool { return slices.Equal(a, b) }

// alone brings member "a", alone in its group, to its first assignment
// of t's partitions ids in session 1, and delivers it.
func (h *core) alone(ids ...int32) Update {
	h.t.Helper()
	h.up(1, 1)
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, ids...))
	return h.next()
}
