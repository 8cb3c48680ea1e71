package partitions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// MaxTopicIDs is the most IDs one topic may hold (2^20, about a million):
// enough for any real topic, small enough that a corrupt or hostile range
// such as "0-2000000000" cannot make a member allocate gigabytes.
const MaxTopicIDs = 1 << 20

// MaxTopicBytes is the most data one topic's znode may hold: a round
// number under ZooKeeper's default request limit (jute.maxbuffer, 1 MiB),
// with room for the request's path and headers. A server refuses a bigger
// write by closing the connection, so such a write could never succeed.
// Dense IDs take a few bytes per range; scattered ones about one byte per
// digit plus a comma, so a topic of every other ID fits up to about
// 145,000 IDs (an ID space of 290,000).
const MaxTopicBytes = 1_000_000

// EncodeIDs writes sorted, distinct, non-negative IDs as compact ranges:
// [0 1 2 3 7 9 10] becomes "0-3,7,9-10". It is the data of a topic's
// znode. The result for no IDs is "".
func EncodeIDs(ids []int32) []byte {
	var b []byte
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(ids[i]), 10)
		if j > i {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
		}
		i = j + 1
	}
	return b
}

// DecodeIDs reads what [EncodeIDs] writes and returns the IDs sorted and
// distinct. Ranges must be ascending and must not touch or overlap, so that
// every set has exactly one encoding, and hold at most [MaxTopicIDs] IDs in
// all; anything else is a [rebalance.ErrInvalid] error naming the bad
// piece.
func DecodeIDs(data []byte) ([]int32, error) {
	var ids []int32
	if _, err := walkIDs(data, func(lo, hi int32) {
		for id := int64(lo); id <= int64(hi); id++ {
			ids = append(ids, int32(id))
		}
	}); err != nil {
		return nil, err
	}
	return ids, nil
}

// CountIDs checks data as [DecodeIDs] does and returns how many IDs it
// holds, without allocating them: a reader can refuse a topic by its
// count before it pays for its IDs.
func CountIDs(data []byte) (int, error) { return walkIDs(data, func(lo, hi int32) {}) }

// walkIDs checks data, ranges as [EncodeIDs] writes them, calling f on
// each range in order, and returns the number of IDs; it stops at the
// first error.
func walkIDs(data []byte, f func(lo, hi int32)) (int, error) {
	s := string(data)
	if s == "" {
		return 0, nil
	}
	n := 0
	next := int64(0) // the smallest ID the next piece may start at
	for piece := range strings.SplitSeq(s, ",") {
		lo, hi, err := parseRange(piece)
		if err != nil {
			return 0, err
		}
		if int64(lo) < next {
			return 0, fmt.Errorf("%w id ranges: %q is out of order or overlaps the one before", rebalance.ErrInvalid, piece)
		}
		if n+int(hi-lo)+1 > MaxTopicIDs {
			return 0, fmt.Errorf("%w id ranges: more than %d IDs", rebalance.ErrInvalid, MaxTopicIDs)
		}
		f(lo, hi)
		n += int(hi-lo) + 1
		next = int64(hi) + 2 // a gap of at least one: adjacent ranges must be merged
	}
	return n, nil
}

func parseRange(piece string) (lo, hi int32, err error) {
	a, b, isRange := strings.Cut(piece, "-")
	if lo, err = rebalance.ParseID(a); err != nil {
		return 0, 0, fmt.Errorf("id ranges: %w", err)
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = rebalance.ParseID(b); err != nil {
		return 0, 0, fmt.Errorf("id ranges: %w", err)
	}
	if hi <= lo {
		return 0, 0, fmt.Errorf("%w id ranges: %q is not ascending", rebalance.ErrInvalid, piece)
	}
	return lo, hi, nil
}

// NormalizeIDs returns ids sorted with duplicates removed; it rejects
// negative IDs. The input is not modified.
func NormalizeIDs(ids []int32) ([]int32, error) {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 0 && out[0] < 0 {
		return nil, fmt.Errorf("%w partition id %d: negative", rebalance.ErrInvalid, out[0])
	}
	return out, nil
}

// Union returns the sorted union of two sorted, distinct ID lists.
func Union(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// Subtract returns the sorted IDs of a that are not in b; both must be
// sorted and distinct.
func Subtract(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	j := 0
	for _, id := range a {
		for j < len(b) && b[j] < id {
			j++
		}
		if j < len(b) && b[j] == id {
			continue
		}
		out = append(out, id)
	}
	return out
}
