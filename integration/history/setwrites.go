package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// SetWrite is one change of the shared partition set (AddPartitions,
// RemovePartitions, the zkalloc command's add or remove), as its writer
// saw it: when it was asked for, when it returned, and how.
type SetWrite struct {
	Writer     string
	Remove     bool // a removal; else an addition
	Partitions []rebalance.Partition
	Invoked    time.Time
	Returned   time.Time
	Result     WriteResult
}

// WriteResult is how a [SetWrite] ended.
type WriteResult uint8

// The results of a [SetWrite].
const (
	// WriteOK: acknowledged; it took effect between Invoked and Returned.
	WriteOK WriteResult = iota
	// WriteFailed: it certainly did not take effect (it was refused, or
	// lost every compare-and-set it tried).
	WriteFailed
	// WriteUnknown: it failed in a way that leaves open whether it took
	// effect (the connection dropped under it), at any time after Invoked.
	WriteUnknown
)

// String returns "ok", "failed" or "unknown".
func (r WriteResult) String() string {
	switch r {
	case WriteOK:
		return "ok"
	case WriteFailed:
		return "failed"
	case WriteUnknown:
		return "unknown"
	}
	return fmt.Sprintf("WriteResult(%d)", uint8(r))
}

func (w SetWrite) describe(at func(time.Time) string) string {
	op := "add"
	if w.Remove {
		op = "remove"
	}
	return fmt.Sprintf("%s %s %v %s..%s (%s)", w.Writer, op, w.Partitions, at(w.Invoked), at(w.Returned), w.Result)
}

// SetRead is the partition set, or one topic of it, as read: a read that
// is up to date when it begins (a ZooKeeper sync, then the reads) and took
// effect at some instant between Invoked and Returned. A read made while
// no write was under way may give one instant for both.
type SetRead struct {
	Reader            string
	Invoked, Returned time.Time
	// Topic, if set, is the one topic read: the read tells nothing of
	// the others. Empty: the whole set.
	Topic string
	Set   []rebalance.Partition // what was read (of Topic, if set)
}

// covers reports whether the read tells whether p is in the set.
func (r SetRead) covers(p rebalance.Partition) bool { return r.Topic == "" || r.Topic == p.Topic }

// LostWrite is a read of the partition set that no linearizable order of
// the writes explains, partition by partition: a lost set write (or a
// stale read).
type LostWrite struct {
	Partition rebalance.Partition
	Read      SetRead
	InSet     bool // whether the read found the partition in the set
	// Latest are the acknowledged writes of the partition that returned
	// last before the read was invoked, and those under way with it, for
	// the message.
	Latest []SetWrite
}

func (l LostWrite) describe(at func(time.Time) string) string {
	found := "absent from"
	if l.InSet {
		found = "in"
	}
	what := "the set"
	if l.Read.Topic != "" {
		what = "topic " + l.Read.Topic
	}
	var last []string
	for _, w := range l.Latest {
		last = append(last, w.describe(at))
	}
	if len(last) == 0 {
		last = append(last, "none")
	}
	return fmt.Sprintf("%s %s %s as %s read it from %s to %s; the latest writes of it: %s",
		l.Partition, found, what, l.Read.Reader, at(l.Read.Invoked), at(l.Read.Returned), strings.Join(last, "; "))
}

// maxLatest caps LostWrite.Latest.
const maxLatest = 4

// checkSetWrites finds the lost set writes. The first read (by Invoked)
// is the starting point; every later read is checked, partition by
// partition, against the writes.
//
// Each write sets a partition's presence: an addition to present, a
// removal to absent. If the writes and reads are linearizable, each took
// effect at one instant within its interval, and a read shows, for each
// partition, what the last write before its instant set (or the starting
// point, if none). That last write W must have been invoked before the
// read returned, and must not be followed by an acknowledged write W2
// that began after W returned and returned before the read began (W2
// would then come after W and before the read). A write of unknown
// outcome may take effect at any time after it was invoked, or never: it
// can be the last if invoked before the read returned, and is never
// known to follow another. A failed write never takes effect. The
// starting point can be the state read only if no acknowledged write
// returned before the read began. A read that shows a presence no
// possible last write set is a lost write: an addition acknowledged
// after every removal of the partition had returned, and the partition
// absent; a partition nobody wrote changed; a removal overwritten by a
// stale compare-and-set.
//
// It is a sound check, not a complete one (it looks at each partition on
// its own), and runs in time O((writes + reads) log writes) per
// partition.
func checkSetWrites(writes []SetWrite, reads []SetRead) []LostWrite {
	if len(reads) < 2 {
		return nil
	}
	reads = slices.Clone(reads)
	slices.SortStableFunc(reads, func(a, b SetRead) int { return a.Invoked.Compare(b.Invoked) })
	start := reads[0]
	byPart := map[rebalance.Partition][]SetWrite{}
	for _, w := range writes {
		for _, p := range w.Partitions {
			byPart[p] = append(byPart[p], w)
		}
	}
	universe := present(start.Set)
	for p := range byPart {
		universe[p] = true
	}
	for _, r := range reads {
		for _, p := range r.Set {
			universe[p] = true
		}
	}
	initial := present(start.Set)
	var lost []LostWrite
	for p := range universe {
		t := newTimeline(byPart[p])
		for _, r := range reads[1:] {
			if !r.covers(p) {
				continue
			}
			in := slices.Contains(r.Set, p)
			if !t.explains(r, in, start.covers(p) && initial[p]) {
				lost = append(lost, LostWrite{Partition: p, Read: r, InSet: in, Latest: t.latest(r)})
			}
		}
	}
	slices.SortFunc(lost, func(a, b LostWrite) int {
		return cmp.Or(a.Read.Invoked.Compare(b.Read.Invoked), rebalance.Compare(a.Partition, b.Partition))
	})
	return lost
}

// timeline indexes one partition's writes for checkSetWrites.
type timeline struct {
	writes []SetWrite
	// acked, by Returned, with the running maximum of their Invoked.
	ackedRet []time.Time
	maxInv   []time.Time
	// by presence set (0: absent, 1: present): the writes that can take
	// effect (acknowledged or unknown), by Invoked, with the running
	// maximum of Returned (unknown writes count as returning never).
	inv    [2][]time.Time
	maxRet [2][]time.Time
}

// never is later than any time in a history.
var never = time.Unix(math.MaxInt64/2, 0)

func newTimeline(ws []SetWrite) *timeline {
	t := &timeline{writes: ws}
	var acked []SetWrite
	var can [2][]SetWrite
	for _, w := range ws {
		if w.Result == WriteFailed {
			continue
		}
		if w.Result == WriteOK {
			acked = append(acked, w)
		}
		v := 1
		if w.Remove {
			v = 0
		}
		can[v] = append(can[v], w)
	}
	slices.SortFunc(acked, func(a, b SetWrite) int { return a.Returned.Compare(b.Returned) })
	var m time.Time
	for _, w := range acked {
		if w.Invoked.After(m) {
			m = w.Invoked
		}
		t.ackedRet = append(t.ackedRet, w.Returned)
		t.maxInv = append(t.maxInv, m)
	}
	for v := range can {
		slices.SortFunc(can[v], func(a, b SetWrite) int { return a.Invoked.Compare(b.Invoked) })
		var m time.Time
		for _, w := range can[v] {
			ret := w.Returned
			if w.Result == WriteUnknown {
				ret = never
			}
			if ret.After(m) {
				m = ret
			}
			t.inv[v] = append(t.inv[v], w.Invoked)
			t.maxRet[v] = append(t.maxRet[v], m)
		}
	}
	return t
}

// explains reports whether some possible last write before r, or the
// starting point (initially), leaves the partition present (in) or not.
func (t *timeline) explains(r SetRead, in, initially bool) bool {
	// x: the latest Invoked among acknowledged writes that returned
	// before r began; a write that returned before x is superseded.
	n, _ := slices.BinarySearchFunc(t.ackedRet, r.Invoked, func(ret, at time.Time) int {
		if ret.Before(at) {
			return -1
		}
		return 1
	})
	if n == 0 && in == initially {
		return true
	}
	var x time.Time
	if n > 0 {
		x = t.maxInv[n-1]
	}
	v := 0
	if in {
		v = 1
	}
	// The writes of v invoked before r returned: is one not superseded?
	k, _ := slices.BinarySearchFunc(t.inv[v], r.Returned, func(inv, at time.Time) int {
		if inv.Before(at) {
			return -1
		}
		return 1
	})
	return k > 0 && !t.maxRet[v][k-1].Before(x)
}

// latest returns the acknowledged writes that returned last before r
// began, and the writes under way with r, for a message.
func (t *timeline) latest(r SetRead) []SetWrite {
	var before, during []SetWrite
	for _, w := range t.writes {
		switch {
		case w.Returned.Before(r.Invoked):
			if w.Result == WriteOK {
				before = append(before, w)
			}
		case w.Invoked.Before(r.Returned):
			during = append(during, w)
		}
	}
	slices.SortFunc(before, func(a, b SetWrite) int { return b.Returned.Compare(a.Returned) })
	out := append(before[:min(len(before), maxLatest)], during[:min(len(during), maxLatest)]...)
	slices.SortFunc(out, func(a, b SetWrite) int { return a.Invoked.Compare(b.Invoked) })
	return out
}

func present(ps []rebalance.Partition) map[rebalance.Partition]bool {
	m := make(map[rebalance.Partition]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}
