package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Options say what the end of a history should look like.
type Options struct {
	// Expected is the final partition set. Empty means the group should end
	// with no partitions. If the history has no [KindExpected] events, it
	// is the set expected throughout. If it has some, each sets the
	// expected set from its instant on, the first also before it (it is
	// the initial set), and the last must equal Expected: if it does not,
	// the report has an anomaly and (c) is checked against Expected.
	Expected []rebalance.Partition
	// FaultsEnd is when the last fault ended. Zero means the latest End
	// among [History.Faults], or no faults at all if there are none.
	FaultsEnd time.Time
	// Deadline bounds how long an expected partition may stay unowned once
	// faults have ended (pass SessionTimeout + Settle + a margin). Zero
	// means no time limit: (b) then only requires every expected partition
	// to be owned when the history ends.
	Deadline time.Duration
	// Live are the members alive at the end, for (c).
	Live []string
	// ResumeBound bounds, for (e), how soon after a [Pause] past its
	// lease a member must have revoked everything, and how long an
	// overlap with a member stopped past its session may last after it
	// was resumed and still be excused (see checkPauses). Zero means no
	// time limit.
	ResumeBound time.Duration
}

// Check sweeps h in time order and reports on (a), (b) and (c); see the
// package documentation for the model. It is a pure function: it reads h
// and opts and modifies neither. Events out of time order are sorted first
// (stably, so ties keep their order in h). It runs in time about linear in
// the total size of the events' Assigned lists, and is safe to call
// concurrently, also on one History.
func Check(h History, opts Options) Report {
	events := h.Events
	byTime := func(a, b Event) int { return a.Time.Compare(b.Time) }
	if !slices.IsSortedFunc(events, byTime) {
		events = slices.Clone(events)
		slices.SortStableFunc(events, byTime)
	}
	c := newChecker(h, events, opts)
	for i := range events {
		c.apply(&events[i])
	}
	r := c.finish()
	r.DoubleOwnerships, r.Excused, r.Resumes = checkPauses(events, h.Pauses, r.DoubleOwnerships, opts.ResumeBound)
	r.ResumeBound = opts.ResumeBound
	r.SetWrites, r.SetReads = len(h.SetWrites), len(h.SetReads)
	r.LostWrites = checkSetWrites(h.SetWrites, h.SetReads)
	return r
}

// checker is the state of one sweep. Partitions are interned to small
// integers (pids) and members to indices, so the hot paths are slice
// lookups.
type checker struct {
	opts       Options
	faults     []Fault
	faultsEnd  time.Time
	start, end time.Time
	nevents    int
	expected   []int32 // sorted pids of the expected set in force

	pids  map[rebalance.Partition]int32
	parts []rebalance.Partition // by pid
	state []partState           // by pid

	mids    map[string]int
	members []*memberState
	seqs    map[int]seqRef

	conv convergence

	overlaps  []Overlap
	unowned   []Gap
	anomalies []string
}

// partState is what the sweep knows about one partition.
type partState struct {
	expected bool          // in the expected set in force
	added    bool          // expected since an Expect event, not since the start
	holders  []int         // members holding it now
	open     []openOverlap // double ownerships not yet over
	owners   int           // members whose newest Update assigns it
	// owned: it has been owned since it last became expected. While it is
	// expected and unowned, it has been since unownedFrom: the stretch
	// is a gap if owned, else the wait for its first owner.
	owned       bool
	unownedFrom time.Time
	longest     Gap // its longest gap so far; valid if hasGap
	hasGap      bool
}

type openOverlap struct {
	Overlap
	a, b int // member indices
}

// memberState is one member's current incarnation.
type memberState struct {
	name   string
	inc    int  // incarnation, bumped by every KindClosed
	active bool // received in this incarnation and not closing or closed since
	// closing: KindClosing was recorded in this incarnation. The member
	// still holds what it held (until it acks an Update assigning nothing,
	// or KindClosed) but has left the group: it no longer counts for
	// convergence.
	closing bool
	// window holds the Assigned of every Update received in this
	// incarnation; window[lo:] are those not superseded by an Ack, whose
	// union is what the member holds. hold counts, per pid, the Updates
	// in window[lo:] that assign it.
	window [][]int32
	lo     int
	hold   []int32
	latest []int32 // Assigned of the newest Update, sorted pids
	// since and tokens, by pid: when the member last began to own the
	// partition (an Update newly assigning it), and its latest token for
	// it (0 if none recorded).
	since  []time.Time
	tokens []int64
	gen    int64
	view   string // key of the newest Update's Members
}

// seqRef locates a received Update: member, incarnation, index in window.
type seqRef struct{ member, inc, idx int }

func newChecker(h History, events []Event, opts Options) *checker {
	c := &checker{
		opts:    opts,
		faults:  h.Faults,
		nevents: len(events),
		pids:    make(map[rebalance.Partition]int32),
		mids:    make(map[string]int),
		seqs:    make(map[int]seqRef),
	}
	c.faultsEnd = opts.FaultsEnd
	if c.faultsEnd.IsZero() {
		for _, f := range h.Faults {
			if f.End.After(c.faultsEnd) {
				c.faultsEnd = f.End
			}
		}
	}
	if len(events) > 0 {
		c.start, c.end = events[0].Time, events[len(events)-1].Time
	}
	c.conv.init()
	initial := opts.Expected
	if i := slices.IndexFunc(events, func(e Event) bool { return e.Kind == KindExpected }); i >= 0 {
		initial = events[i].Expected
	}
	c.expected = c.set(initial)
	for _, id := range c.expected {
		ps := &c.state[id]
		ps.expected, ps.unownedFrom = true, c.start
		c.conv.bad++ // expected and not yet owned
	}
	return c
}

// pid interns p.
func (c *checker) pid(p rebalance.Partition) int32 {
	if id, ok := c.pids[p]; ok {
		return id
	}
	id := int32(len(c.parts))
	c.pids[p] = id
	c.parts = append(c.parts, p)
	c.state = append(c.state, partState{})
	return id
}

// set interns ps as sorted distinct pids.
func (c *checker) set(ps []rebalance.Partition) []int32 {
	if len(ps) == 0 {
		return nil
	}
	ids := make([]int32, len(ps))
	for i, p := range ps {
		ids[i] = c.pid(p)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// names returns the partitions of pids, sorted for messages.
func (c *checker) names(pids []int32) []rebalance.Partition {
	ps := make([]rebalance.Partition, len(pids))
	for i, id := range pids {
		ps[i] = c.parts[id]
	}
	rebalance.Sort(ps)
	return ps
}

func (c *checker) member(name string) (int, *memberState) {
	i, ok := c.mids[name]
	if !ok {
		i = len(c.members)
		c.mids[name] = i
		c.members = append(c.members, &memberState{name: name})
	}
	return i, c.members[i]
}

func (c *checker) anomaly(t time.Time, format string, args ...any) {
	c.anomalies = append(c.anomalies, offset(c.start, t)+" "+fmt.Sprintf(format, args...))
}

func (c *checker) apply(e *Event) {
	switch e.Kind {
	case KindReceived:
		c.received(e)
	case KindAcked:
		c.acked(e)
	case KindClosed:
		c.closed(e)
	case KindClosing:
		c.closing(e)
	case KindExpected:
		c.setExpected(c.set(e.Expected), e.Time)
	default:
		c.anomaly(e.Time, "%s: unknown event kind %d", e.Member, e.Kind)
	}
	c.conv.observe(e.Time)
}

func (c *checker) received(e *Event) {
	mi, m := c.member(e.Member)
	if _, dup := c.seqs[e.Seq]; dup {
		c.anomaly(e.Time, "%s: received seq %d, already used", m.name, e.Seq)
	} else {
		c.seqs[e.Seq] = seqRef{member: mi, inc: m.inc, idx: len(m.window)}
	}
	assigned := c.set(e.Assigned)
	added, removed := diff(m.latest, assigned)
	m.grow(len(c.parts))
	for _, id := range added {
		m.since[id] = e.Time
	}
	if len(e.Tokens) == len(e.Assigned) {
		for i, p := range e.Assigned {
			m.tokens[c.pids[p]] = e.Tokens[i]
		}
	}
	if revoked := c.set(e.Revoked); !slices.Equal(revoked, removed) {
		c.anomaly(e.Time, "%s: seq %d revokes %v but drops %v from the previous Assigned",
			m.name, e.Seq, c.names(revoked), c.names(removed))
	}

	m.window = append(m.window, assigned)
	for _, id := range assigned {
		c.hold(mi, id, e.Time)
	}
	for _, id := range removed {
		c.disown(id, e.Time)
	}
	for _, id := range added {
		c.own(id, e.Time)
	}
	if m.closing {
		// Close's final Update: the member no longer counts for
		// convergence.
		m.latest, m.gen, m.view = assigned, e.Generation, viewKey(e.Members)
		return
	}
	if m.active {
		c.conv.remove(m.gen, m.view)
	} else {
		c.conv.start(m.name)
	}
	m.active, m.latest, m.gen, m.view = true, assigned, e.Generation, viewKey(e.Members)
	c.conv.add(m.gen, m.view)
}

func (c *checker) acked(e *Event) {
	mi, m := c.member(e.Member)
	ref, ok := c.seqs[e.Seq]
	switch {
	case !ok || ref.member != mi:
		c.anomaly(e.Time, "%s: acked seq %d, which it had not received", m.name, e.Seq)
		return
	case ref.inc != m.inc || ref.idx <= m.lo:
		return // an earlier incarnation's, or superseded by a later Ack
	}
	for i := m.lo; i < ref.idx; i++ {
		for _, id := range m.window[i] {
			c.unhold(mi, id, e.Time)
		}
		m.window[i] = nil
	}
	m.lo = ref.idx
}

// closing marks the member as leaving: it stops counting for convergence
// at once, but keeps holding what it holds, and owning what its newest
// Update assigns, until its consumer acks an Update that assigns nothing
// (the ordinary Ack rule releases everything then) or until KindClosed.
// A hand-off before that Ack is a double ownership.
func (c *checker) closing(e *Event) {
	_, m := c.member(e.Member)
	if m.active {
		c.conv.remove(m.gen, m.view)
		c.conv.stop(m.name)
	}
	m.active, m.closing = false, true
}

func (c *checker) closed(e *Event) {
	mi, m := c.member(e.Member)
	for i := m.lo; i < len(m.window); i++ {
		for _, id := range m.window[i] {
			c.unhold(mi, id, e.Time)
		}
	}
	for _, id := range m.latest {
		c.disown(id, e.Time)
	}
	if m.active {
		c.conv.remove(m.gen, m.view)
		c.conv.stop(m.name)
	}
	m.inc++
	m.active, m.closing, m.window, m.lo, m.latest, m.gen, m.view = false, false, nil, 0, nil, 0, ""
}

func (c *checker) finish() Report {
	if final := c.set(c.opts.Expected); !slices.Equal(final, c.expected) {
		added, removed := diff(c.expected, final)
		c.anomaly(c.end, "Options.Expected is not the last expected set recorded: it adds %v and drops %v",
			c.names(added), c.names(removed))
		c.setExpected(final, c.end)
	}
	for id := range c.state {
		ps := &c.state[id]
		for _, o := range ps.open {
			o.To, o.Open = c.end, true
			c.overlaps = append(c.overlaps, o.Overlap)
		}
		if ps.expected && ps.owners == 0 {
			c.unownedUntil(int32(id), c.end, true)
		}
	}
	r := Report{
		Events:     c.nevents,
		Members:    len(c.members),
		Partitions: len(c.parts),
		Start:      c.start,
		End:        c.end,
		FaultsEnd:  c.faultsEnd,
		Deadline:   c.opts.Deadline,

		DoubleOwnerships: c.overlaps,
		Unowned:          c.unowned,
		Anomalies:        c.anomalies,
	}
	slices.SortStableFunc(r.DoubleOwnerships, func(a, b Overlap) int {
		return cmp.Or(a.From.Compare(b.From), rebalance.Compare(a.Partition, b.Partition))
	})
	slices.SortStableFunc(r.Unowned, func(a, b Gap) int {
		return cmp.Or(a.From.Compare(b.From), rebalance.Compare(a.Partition, b.Partition))
	})
	for id := range c.state {
		if ps := &c.state[id]; ps.hasGap {
			r.LongestGaps = append(r.LongestGaps, ps.longest)
			if ps.longest.Duration() > r.LongestGap.Duration() {
				r.LongestGap = ps.longest
			}
		}
	}
	slices.SortFunc(r.LongestGaps, func(a, b Gap) int { return rebalance.Compare(a.Partition, b.Partition) })
	r.Converged, r.Generation, r.Divergence = c.converged()
	r.FaultsByKind, r.Recoveries = c.conv.recoveries(c.faults, c.end)
	return r
}
