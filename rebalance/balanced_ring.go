package rebalance

import "math/bits"

// ring is a consistent-hashing ring of vnodesPerMember points per member,
// sorted by key, with an index on the keys' top bits so that finding a
// key's successor takes constant expected time.
type ring struct {
	keys   []uint64 // sorted; ties ordered by owner
	owners []int32  // owners[i] is the member index of keys[i]
	shift  uint     // a key's bucket is key >> shift
	start  []int32  // start[b]: first point in bucket b or later; len 1<<(64-shift) + 1
}

func newRing(mkeys []uint64) ring {
	n := len(mkeys) * vnodesPerMember
	b := max(bits.Len(uint(n))-1, 1) // one to two points per bucket
	r := ring{
		keys:   make([]uint64, n),
		owners: make([]int32, n),
		shift:  uint(64 - b),
		start:  make([]int32, 1<<b+1),
	}
	// Counting sort on the top b bits, then insertion sort in each bucket.
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
	for bkt := range len(r.start) - 1 {
		lo, hi := int(r.start[bkt]), int(r.start[bkt+1])
		for i := lo + 1; i < hi; i++ {
			for j := i; j > lo && (r.keys[j] < r.keys[j-1] || r.keys[j] == r.keys[j-1] && r.owners[j] < r.owners[j-1]); j-- {
				r.keys[j], r.keys[j-1] = r.keys[j-1], r.keys[j]
				r.owners[j], r.owners[j-1] = r.owners[j-1], r.owners[j]
			}
		}
	}
	return r
}

// successor returns the position of the first point at or after key,
// wrapping around to 0.
func (r ring) successor(key uint64) int32 {
	b := key >> r.shift
	end := r.start[b+1]
	for i := r.start[b]; i < end; i++ {
		if r.keys[i] >= key {
			return i
		}
	}
	if int(end) == len(r.keys) {
		return 0
	}
	return end
}
