package history

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// EventKind says what a member's consumer did.
type EventKind uint8

// The kinds of [Event].
const (
	// KindReceived: the consumer received an Update.
	KindReceived EventKind = iota + 1
	// KindAcked: the consumer stopped the partitions revoked by the Update
	// numbered [Event.Seq], and everything else not assigned by it or by a
	// later received Update.
	KindAcked
	// KindClosed: the consumer stopped every partition. A later
	// KindReceived for the same member starts a new incarnation.
	KindClosed
	// KindExpected: from now on the group should own [Event.Expected];
	// see [Recorder.Expect]. It concerns no member.
	KindExpected
	// KindClosing: the member's allocator is being closed while its
	// consumer goes on reading Updates; see [Recorder.Closing]. The member
	// still holds its partitions until its consumer acks an Update that
	// assigns nothing (the final Update), or until KindClosed.
	KindClosing
)

// String returns "received", "acked", "closed", "expected" or "closing".
func (k EventKind) String() string {
	switch k {
	case KindReceived:
		return "received"
	case KindAcked:
		return "acked"
	case KindClosed:
		return "closed"
	case KindExpected:
		return "expected"
	case KindClosing:
		return "closing"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one recorded step of one member's consumer. Its slices are
// shared between copies and must not be modified.
type Event struct {
	Time   time.Time // when it was recorded
	Kind   EventKind
	Member string // the member's name, the same across its incarnations; "" for KindExpected
	// Seq numbers Updates: for KindReceived, the number [Recorder.Received]
	// returned (unique within a history); for KindAcked, the number of the
	// acknowledged Update; 0 for KindClosed and KindClosing.
	Seq int
	// Generation, Members, Assigned and Revoked copy the received Update;
	// they are set for KindReceived only.
	Generation int64
	Members    []string
	Assigned   []rebalance.Partition
	Revoked    []rebalance.Partition
	// Tokens are the fencing tokens of Assigned, in its order, for
	// KindReceived; nil if not recorded.
	Tokens []int64
	// Expected is the partition set expected from now on, for
	// KindExpected only.
	Expected []rebalance.Partition
}

// Fault is one injected fault, for the report.
type Fault struct {
	Kind       string    // free text, such as "kill" or "partition"
	Start, End time.Time // when it was active
}

// History is what a [Recorder] saw: events ordered by time (ties in the
// order they were recorded), faults ordered by start, pauses, writes of
// the partition set and reads of it, each ordered by time. [Check] reads
// it; tests may also build one by hand.
type History struct {
	Events    []Event
	Faults    []Fault
	Pauses    []Pause
	SetWrites []SetWrite
	SetReads  []SetRead
}

// Recorder collects the events of many members' consumers. It is safe for
// concurrent use by many goroutines, starts none, and never blocks on
// anything but its own short lock. The zero value is ready to use and
// stamps events with [time.Now].
type Recorder struct {
	now func() time.Time

	mu        sync.Mutex
	seq       int
	events    []Event
	faults    []Fault
	pauses    []Pause
	setWrites []SetWrite
	setReads  []SetRead
}

// NewRecorder returns an empty Recorder that stamps events with now, or
// with [time.Now] if now is nil. now is called with the Recorder's lock
// held, so calls are serialised and stamps follow the recording order for
// any clock that does not go backwards.
func NewRecorder(now func() time.Time) *Recorder {
	return &Recorder{now: now}
}

// Received records that member's consumer received an Update and returns
// the Update's sequence number, unique in this Recorder, to pass to
// [Recorder.Acked]. The slices are copied.
func (r *Recorder) Received(member string, generation int64, members []string, assigned, revoked []rebalance.Partition) int {
	e := Event{
		Kind:       KindReceived,
		Member:     member,
		Generation: generation,
		Members:    slices.Clone(members),
		Assigned:   slices.Clone(assigned),
		Revoked:    slices.Clone(revoked),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq = r.seq
	r.recordLocked(e)
	return e.Seq
}

// Record records e as given, for a consumer that is not in this process
// and stamps its own events (a member process on the same machine, whose
// clock is this one's): a zero Time is stamped now. A KindReceived event
// gets a new sequence number, which Record returns (e.Seq is ignored);
// any other keeps e.Seq, which Record returns. The slices are copied.
func (r *Recorder) Record(e Event) int {
	e.Members = slices.Clone(e.Members)
	e.Assigned = slices.Clone(e.Assigned)
	e.Revoked = slices.Clone(e.Revoked)
	e.Tokens = slices.Clone(e.Tokens)
	e.Expected = slices.Clone(e.Expected)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Kind == KindReceived {
		r.seq++
		e.Seq = r.seq
	}
	at := e.Time
	r.recordLocked(e)
	if !at.IsZero() {
		r.events[len(r.events)-1].Time = at
	}
	return e.Seq
}

// Acked records that member's consumer acknowledged the Update that
// [Recorder.Received] numbered seq: it has stopped every partition that
// neither that Update nor a later one it received assigns.
func (r *Recorder) Acked(member string, seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordLocked(Event{Kind: KindAcked, Member: member, Seq: seq})
}

// Closed records that member's consumer stopped every partition: it is
// called once the consumer has stopped, either when it has taken the last
// Update of a graceful close (after [Recorder.Closing]), or before (or
// instead of) the allocator's Close when the harness kills the member.
// Whatever the member still held is released now. The member may later
// receive again under the same name.
func (r *Recorder) Closed(member string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordLocked(Event{Kind: KindClosed, Member: member})
}

// Closing records that member's allocator is being closed (call it just
// before Close) while its consumer goes on reading Updates, stopping what
// they revoke and acking them, as Close requires. Closing releases
// nothing: the member holds its partitions until its consumer acks an
// Update that assigns nothing (Close's final Update), so that another
// member taking one over before that Ack is a double ownership. Record
// [Recorder.Closed] when the consumer's loop ends.
func (r *Recorder) Closing(member string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordLocked(Event{Kind: KindClosing, Member: member})
}

// Expect records that from now on the group should own exactly parts
// (until the next call). Call it with the initial set before any member
// starts, and again after each change of the set, once the change is made
// (for instance when AddPartitions returns); [Check] then judges each
// instant against the set in force, and the last call should agree with
// [Options.Expected]. The slice is copied.
func (r *Recorder) Expect(parts []rebalance.Partition) {
	e := Event{Kind: KindExpected, Expected: slices.Clone(parts)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recordLocked(e)
}

// Fault records one injected fault of the given kind, active from start to
// end. It does not stamp anything: the caller knows when the fault was.
func (r *Recorder) Fault(kind string, start, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, Fault{Kind: kind, Start: start, End: end})
}

// Paused records that p.Member's process was stopped from p.From to p.To;
// see [Pause].
func (r *Recorder) Paused(p Pause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pauses = append(r.pauses, p)
}

// SetWrite records one write of the partition set, once it has returned;
// see [SetWrite]. The slice is copied.
func (r *Recorder) SetWrite(w SetWrite) {
	w.Partitions = slices.Clone(w.Partitions)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setWrites = append(r.setWrites, w)
}

// SetRead records a read of the partition set; see [SetRead] and
// [Check]. The slice is copied.
func (r *Recorder) SetRead(read SetRead) {
	read.Set = slices.Clone(read.Set)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setReads = append(r.setReads, read)
}

// History returns a copy of what was recorded so far: events ordered by
// time, ties in recording order, faults ordered by start, and pauses,
// set writes (by invocation) and set reads ordered by time. The copied
// events share their slices with the Recorder; nobody modifies them.
func (r *Recorder) History() History {
	r.mu.Lock()
	h := History{
		Events:    slices.Clone(r.events),
		Faults:    slices.Clone(r.faults),
		Pauses:    slices.Clone(r.pauses),
		SetWrites: slices.Clone(r.setWrites),
		SetReads:  slices.Clone(r.setReads),
	}
	r.mu.Unlock()
	slices.SortStableFunc(h.Events, func(a, b Event) int { return a.Time.Compare(b.Time) })
	slices.SortStableFunc(h.Faults, func(a, b Fault) int {
		return cmp.Or(a.Start.Compare(b.Start), a.End.Compare(b.End))
	})
	slices.SortStableFunc(h.Pauses, func(a, b Pause) int { return a.From.Compare(b.From) })
	slices.SortStableFunc(h.SetWrites, func(a, b SetWrite) int { return a.Invoked.Compare(b.Invoked) })
	slices.SortStableFunc(h.SetReads, func(a, b SetRead) int { return a.Invoked.Compare(b.Invoked) })
	return h
}

// recordLocked stamps e and appends it; r.mu must be held.
func (r *Recorder) recordLocked(e Event) {
	if r.now != nil {
		e.Time = r.now()
	} else {
		e.Time = time.Now()
	}
	r.events = append(r.events, e)
}
