package history

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/partitions"
)

// SetWrite is one change of the shared partition set (AddPartitions,
// RemovePartitions, the zkalloc command's add or remove), as its writer
// saw it: when it was asked for, when it returned, and how.
type SetWrite struct {
	Writer     string
	Remove     bool // a removal; else an addition
	Partitions []partitions.Partition
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

// SetRead is the partition set as read at an instant when no write was
// under way: every [SetWrite] before it had returned, and none after it
// had been invoked.
type SetRead struct {
	At  time.Time
	Set []partitions.Partition
}

// LostWrite is a partition whose presence in a [SetRead] no sequential
// order of the writes since the previous read explains: a lost set write.
type LostWrite struct {
	Partition partitions.Partition
	Read      time.Time // the read that found it wrong
	InSet     bool      // whether the read found it in the set
	// Last are the writes of the partition that could have been the last
	// to take effect (see checkSetWrites); none of them leaves it as read.
	Last []SetWrite
}

func (l LostWrite) describe(at func(time.Time) string) string {
	found := "absent from"
	if l.InSet {
		found = "in"
	}
	if len(l.Last) == 0 {
		return fmt.Sprintf("%s %s the set read at %s, though no write since the read before took effect on it", l.Partition, found, at(l.Read))
	}
	var last []string
	for _, w := range l.Last {
		last = append(last, w.describe(at))
	}
	return fmt.Sprintf("%s %s the set read at %s; the writes that could be the last: %s", l.Partition, found, at(l.Read), strings.Join(last, "; "))
}

// checkSetWrites finds the lost set writes: it checks, partition by
// partition, every read against the writes made since the read before
// it, which it takes as the starting point. (The first read, with nothing
// before it, is only a starting point.)
//
// Each write sets a partition's presence: an addition to present, a
// removal to absent. If the writes were linearizable, each took effect at
// one instant between its Invoked and its Returned, and the set read
// afterwards shows, for each partition, the presence that the last of
// them to take effect set. The last can be any write not followed by
// another in real time: a write W can be last unless some acknowledged
// write of the same partition was invoked after W returned (it then took
// effect after W). A write of unknown outcome may have taken effect at
// any time after it was invoked, so it can always be last; one that
// certainly failed never can. The read must show the presence that one
// of those candidates set, or, if no write touched the partition, the
// presence the previous read showed; a partition no write touched must
// be as the previous read showed it. Anything else is a lost write: for
// example an addition acknowledged after every removal of the partition
// had returned, and the partition absent, or a partition nobody wrote
// brought back by a stale compare-and-set.
//
// It is a sound check, not a complete one: it looks at each partition on
// its own, and a write lost and then made again by a later write goes
// unseen. It runs in time about linear in the number of writes per
// partition, squared.
func checkSetWrites(writes []SetWrite, reads []SetRead) []LostWrite {
	reads = slices.Clone(reads)
	slices.SortStableFunc(reads, func(a, b SetRead) int { return a.At.Compare(b.At) })
	var lost []LostWrite
	for k := 1; k < len(reads); k++ {
		prev, cur := reads[k-1], reads[k]
		before := present(prev.Set)
		after := present(cur.Set)
		byPart := map[partitions.Partition][]SetWrite{}
		for _, w := range writes {
			if w.Invoked.Before(prev.At) || w.Invoked.After(cur.At) {
				continue
			}
			for _, p := range w.Partitions {
				byPart[p] = append(byPart[p], w)
			}
		}
		for _, set := range []map[partitions.Partition]bool{before, after} {
			for p := range set {
				if _, written := byPart[p]; !written && before[p] != after[p] {
					lost = append(lost, LostWrite{Partition: p, Read: cur.At, InSet: after[p]})
				}
			}
		}
		for p, ws := range byPart {
			last := lastCandidates(ws)
			want := make(map[bool]bool, 2)
			for _, w := range last {
				want[!w.Remove] = true
			}
			if len(last) == 0 {
				want[before[p]] = true // only failed writes: unchanged
			}
			if !want[after[p]] {
				lost = append(lost, LostWrite{Partition: p, Read: cur.At, InSet: after[p], Last: last})
			}
		}
	}
	slices.SortFunc(lost, func(a, b LostWrite) int {
		if c := a.Read.Compare(b.Read); c != 0 {
			return c
		}
		return partitions.Compare(a.Partition, b.Partition)
	})
	return lost
}

// lastCandidates returns the writes of ws (all of one partition) that can
// have been the last to take effect, in the order of ws.
func lastCandidates(ws []SetWrite) []SetWrite {
	var out []SetWrite
	for i, w := range ws {
		switch w.Result {
		case WriteFailed:
			continue
		case WriteUnknown:
			out = append(out, w)
			continue
		}
		followed := false
		for j, v := range ws {
			if j != i && v.Result == WriteOK && v.Invoked.After(w.Returned) {
				followed = true
				break
			}
		}
		if !followed {
			out = append(out, w)
		}
	}
	return out
}

func present(ps []partitions.Partition) map[partitions.Partition]bool {
	m := make(map[partitions.Partition]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}
