package rebalance

// The hashes below are part of Balanced's contract: every member of a
// group must compute the same assignment, whatever its machine, process or
// Go version, so they are written out here instead of taken from
// hash/maphash or a map. Changing any constant changes the assignment of
// every group and must be treated as a new strategy.

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
	golden64    = 0x9e3779b97f4a7c15 // 2^64 / phi, splitmix64's increment
)

// fnv1a64 is the 64-bit FNV-1a hash of s.
func fnv1a64(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// mix64 is the splitmix64 finalizer: a bijection on uint64 whose output
// bits each depend on all input bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// partitionKey places partition id of the topic whose fnv1a64 is topic.
func partitionKey(topic uint64, id int32) uint64 {
	return mix64(topic ^ mix64(uint64(uint32(id))+golden64))
}

// memberKey places a member by name.
func memberKey(name string) uint64 { return mix64(fnv1a64(name)) }

// vnodeKey is the ring position of a member's k-th virtual node.
func vnodeKey(member uint64, k int) uint64 { return mix64(member + uint64(k+1)*golden64) }
