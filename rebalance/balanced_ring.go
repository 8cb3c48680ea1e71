package rebalance

import (
	"math"
	"math/bits"
)

// ring is a consistent-hashing ring of vnodesPerMember points per member,
// sorted by key, with an index on the keys' top bits so that finding a
// key's successor takes constant expected time.
type ring struct {
	// keys are the points' keys, sorted, ties ordered by owner, followed
	// by a sentinel math.MaxUint64 so that successor can look one past the
	// last point without a bounds check of its own.
	keys   []uint64
	owners []int32 // owners[i] is the member index of keys[i]
	shift  uint    // a key's bucket is key >> shift
	start  []int32 // start[b]: first point in bucket b or later; len 1<<(64-shift) + 1
}

// len returns the number of points, without the sentinel.
func (r ring) len() int32 { return int32(len(r.owners)) }

// newRing builds the ring of the members of keys mkeys in s's memory.
func (s *balancedScratch) newRing(mkeys []uint64) ring {
	n := len(mkeys) * vnodesPerMember
	// Between half a point and one point per bucket, so that most
	// lookups find their successor at the start of their bucket or the
	// next point.
	b := max(bits.Len(uint(n)), 1)
	r := ring{
		keys:   resize(&s.ringKeys, n+1),
		owners: resize(&s.ringOwners, n),
		shift:  uint(64 - b),
		start:  resize(&s.ringStart, 1<<b+1),
	}
	clear(r.start) // the counting sort's counts
	r.keys[n] = math.MaxUint64
	// Counting sort on the top b bits, then one insertion sort over the
	// whole ring, which moves points only within their bucket.
	for _, mk := range mkeys {
		for k := range vnodesPerMember {
			r.start[vnodeKey(mk, k)>>r.shift+1]++
		}
	}
	for i := 1; i < len(r.start); i++ {
		r.start[i] += r.start[i-1]
	}
	// Scatter, advancing each bucket's start to its end; then every
	// start[b] holds what start[b+1] held, so shift them back.
	for m, mk := range mkeys {
		for k := range vnodesPerMember {
			key := vnodeKey(mk, k)
			at := r.start[key>>r.shift]
			r.start[key>>r.shift]++
			r.keys[at], r.owners[at] = key, int32(m)
		}
	}
	copy(r.start[1:], r.start[:len(r.start)-1])
	r.start[0] = 0
	keys, owners := r.keys[:n], r.owners
	for i := 1; i < n; i++ {
		key, owner := keys[i], owners[i]
		j := i
		for ; j > 0 && (key < keys[j-1] || key == keys[j-1] && owner < owners[j-1]); j-- {
			keys[j], owners[j] = keys[j-1], owners[j-1]
		}
		keys[j], owners[j] = key, owner
	}
	return r
}

// successor returns the position of the first point at or after key,
// wrapping around to 0.
func (r ring) successor(key uint64) int32 {
	// Points before start[key>>shift] are in earlier buckets, so below
	// key, and points from start[key>>shift+1] on are in later ones, so
	// above it; the sentinel stops the walk at the end. The first two
	// steps are written out so that they compile to conditional moves:
	// with at most one point per bucket on average they nearly always
	// reach the answer without a branch to mispredict.
	i := r.start[key>>r.shift]
	i += below(r.keys[i], key)
	i += below(r.keys[i], key)
	for r.keys[i] < key {
		i++
	}
	if int(i) == len(r.owners) {
		return 0
	}
	return i
}

// below returns 1 if a < b and 0 otherwise, written so that the compiler
// emits a conditional move or set rather than a branch.
func below(a, b uint64) int32 {
	var one int32
	if a < b {
		one = 1
	}
	return one
}

// pointSet is a set of ring positions, one bit each, that finds the next
// member clockwise from any position in a few word operations.
type pointSet struct {
	words []uint64
	n     int32 // positions are 0 to n-1
}

// next returns the first position in s at or after i, wrapping around to
// 0 past the last position; i may be n. s must not be empty.
func (s pointSet) next(i int32) int32 {
	if i < s.n {
		w := i / 64
		if word := s.words[w] >> (i % 64); word != 0 {
			return i + int32(bits.TrailingZeros64(word))
		}
		for w++; w < int32(len(s.words)); w++ {
			if s.words[w] != 0 {
				return w*64 + int32(bits.TrailingZeros64(s.words[w]))
			}
		}
	}
	for w, word := range s.words {
		if word != 0 {
			return int32(w)*64 + int32(bits.TrailingZeros64(word))
		}
	}
	panic("rebalance: next in an empty pointSet")
}
