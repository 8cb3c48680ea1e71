package rebalance

import (
	"sync"
	"unsafe"
)

// balancedScratch is the working memory of one Balanced.Assign call:
// everything it allocates except the result, which callers keep. Calls
// take one from balancedScratchPool and put it back, so that a process
// that rebalances again and again stops allocating, and zeroing, the
// ring and per-partition arrays every time, which was most of the cost
// of a call.
//
// Each slice is resized by its user with resize and holds nothing from
// one call to the next: a user that relies on zeros (counts, sizes, the
// ring's counting sort) clears its slice, and all others write every
// element before reading it. Nothing in it refers to a caller's memory.
type balancedScratch struct {
	mkeys []uint64 // member keys

	// The ring's arrays (see ring).
	ringKeys   []uint64
	ringOwners []int32
	ringStart  []int32

	// primaries, quotas and shed.
	dist      []uint64 // each partition's distance to its primary point
	owner     []int32  // each partition's owner
	counts    []int32  // each member's partition count
	keyStart  []int32  // the partitions' counting sort by key
	byKey     []int32  // partitions by their keys' top bits
	order     []int32  // members by rank for the quotas
	quota     []int32  // each member's quota
	shedStart []int32
	shedSize  []int32
	shedAbove []uint64
	cands     []keyed
	pool      []int32 // the shed partitions
	poolMarks []uint64

	// fill.
	under     []uint64
	openWords []uint64
	fillStart []int32
	fillSize  []int32
	held      []keyed
	key       []uint64
	at        []int32
	queue     []int32

	next []int32 // Assign's next position in the result for each member
}

// maxPooledScratch is the most memory a balancedScratch may hold and still
// go back to the pool, about what 1,000 members and 2.5 million partitions
// need. A larger one is left to the garbage collector, so that one huge
// call does not keep its memory for ever through smaller calls that reuse
// it.
const maxPooledScratch = 64 << 20

var balancedScratchPool = sync.Pool{New: func() any { return new(balancedScratch) }}

func getBalancedScratch() *balancedScratch {
	return balancedScratchPool.Get().(*balancedScratch)
}

func putBalancedScratch(s *balancedScratch) {
	if s.bytes() <= maxPooledScratch {
		balancedScratchPool.Put(s)
	}
}

// bytes returns the memory held by s's slices.
func (s *balancedScratch) bytes() int {
	const u64, i32 = 8, 4
	return u64*(cap(s.mkeys)+cap(s.ringKeys)+cap(s.poolMarks)+cap(s.shedAbove)+cap(s.dist)+cap(s.under)+cap(s.openWords)+cap(s.key)) +
		i32*(cap(s.ringOwners)+cap(s.ringStart)+cap(s.owner)+cap(s.counts)+cap(s.keyStart)+cap(s.byKey)+cap(s.order)+cap(s.quota)+
			cap(s.shedStart)+cap(s.shedSize)+cap(s.pool)+cap(s.fillStart)+cap(s.fillSize)+
			cap(s.at)+cap(s.queue)+cap(s.next)) +
		int(unsafe.Sizeof(keyed{}))*(cap(s.cands)+cap(s.held))
}

// resize sets *buf to a slice of length n, reusing its memory if it is
// large enough, and returns it. The elements are not zeroed.
func resize[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}
