package assignment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// appendIDs writes sorted, distinct, non-negative IDs as comma-separated
// pieces: "a" (one ID), "a-b" (every ID from a to b) or "a-b/s" (a, a+s,
// ... b, for a step s ≥ 2 and at least 3 IDs). The step form is what
// makes a sticky share small: a first assignment is round-robin over the
// sorted partitions, so a member's IDs in a topic are one arithmetic
// progression, "7-9007/1000" for 10 IDs out of 10,000 among 1,000
// members. Pieces are taken greedily from the left, each as long as it
// can be, so a set has one encoding.
func appendIDs(b []byte, ids []int32) []byte {
	for i := 0; i < len(ids); {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(ids[i]), 10)
		if i+1 == len(ids) {
			break
		}
		d := ids[i+1] - ids[i]
		j := i + 1
		for j+1 < len(ids) && ids[j+1]-ids[j] == d {
			j++
		}
		switch {
		case d == 1:
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
		case j-i >= 2:
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(ids[j]), 10)
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(d), 10)
		default:
			j = i // a lone ID: the next one may start a longer piece
		}
		i = j + 1
	}
	return b
}

// walkIDs checks pieces as appendIDs writes them, ascending and not
// overlapping, and calls f on each ID in order. At most limit IDs are
// accepted, counted before any is produced, so that a hostile piece such
// as "0-2000000000" costs nothing. It returns the number of IDs.
func walkIDs(s string, limit int, f func(id int32)) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("%w IDs: empty", ErrInvalid)
	}
	n := 0
	next := int64(0) // the smallest ID the next piece may start at
	for piece := range strings.SplitSeq(s, ",") {
		lo, hi, step, err := parsePiece(piece)
		if err != nil {
			return n, err
		}
		if lo < next {
			return n, fmt.Errorf("%w IDs: piece %q is not above the one before it", ErrInvalid, piece)
		}
		count := (hi-lo)/step + 1
		if count > int64(limit-n) {
			return n, fmt.Errorf("%w IDs: more than %d", ErrInvalid, limit)
		}
		for id := lo; id <= hi; id += step {
			f(int32(id))
		}
		n += int(count)
		next = hi + 1
	}
	return n, nil
}

// parsePiece reads "a", "a-b" or "a-b/s" with a < b, s ≥ 2 dividing
// b-a, and at least 3 IDs for a step.
func parsePiece(piece string) (lo, hi, step int64, err error) {
	bad := func(why string) (int64, int64, int64, error) {
		return 0, 0, 0, fmt.Errorf("%w IDs: piece %q: %s", ErrInvalid, piece, why)
	}
	rng, st, hasStep := strings.Cut(piece, "/")
	a, b, hasHi := strings.Cut(rng, "-")
	if lo, err = id64(a); err != nil {
		return bad("not an ID")
	}
	if !hasHi {
		if hasStep {
			return bad("a step without a range")
		}
		return lo, lo, 1, nil
	}
	if hi, err = id64(b); err != nil {
		return bad("not an ID")
	}
	if hi <= lo {
		return bad("not ascending")
	}
	step = 1
	if hasStep {
		s, err := id64(st)
		if err != nil || s < 2 || (hi-lo)%s != 0 || (hi-lo)/s < 2 {
			return bad("the step must be at least 2, divide the range and give at least 3 IDs")
		}
		step = s
	}
	return lo, hi, step, nil
}

// id64 reads an ID as [rebalance.ParseID] does, widened so that ranges
// and steps compute without overflow.
func id64(s string) (int64, error) {
	id, err := rebalance.ParseID(s)
	return int64(id), err
}
