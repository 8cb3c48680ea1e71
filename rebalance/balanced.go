package rebalance

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// Balanced is an even, low-movement strategy: every member gets
// floor(P/M) or ceil(P/M) of the P partitions (a spread of at most one),
// and a change of members moves far fewer partitions than [RoundRobin] or
// [Range], though more than the minimum of [MinMoves].
//
// It is a pure function of the sorted members and partitions, and uses
// only fixed hashes (never map order or a seeded hash), so every process
// on every machine and Go version computes the same result. Partitions
// first go to their primary owner on a consistent-hash ring of 128 points
// per member; members over their quota then shed the partitions farthest
// from their point, and those go to the members under quota by deferred
// acceptance, which does not depend on any processing order.
//
// A join or leave typically moves 1.15 to 2.2 times the minimum (more
// with many members or few partitions each), and a call takes
// O(P + 128·M) time, milliseconds for 100,000 partitions: docs/balanced.md
// has the algorithm, the measurements and why no stateless strategy
// reaches the minimum.
//
// Balanced is safe for concurrent use.
var Balanced Strategy = balanced{}

type balanced struct{}

func (balanced) builtin()     {}
func (balanced) Name() string { return "balanced" }

// vnodesPerMember is the number of ring points per member; more points
// even out the members' arcs at a cost in time and memory.
const vnodesPerMember = 128

func (balanced) Assign(members []string, parts []Partition) (map[string][]Partition, error) {
	out := make(map[string][]Partition, len(members))
	if len(members) == 0 {
		return out, errNoMembers(parts)
	}
	s := getBalancedScratch()
	defer putBalancedScratch(s)
	owner, counts := s.owners(members, parts)
	// One backing array, cut into shares with no room to grow into the
	// next; parts are sorted, so each share is too. The result is fresh
	// memory: callers keep it, so none of it comes from the scratch.
	backing := make([]Partition, len(parts))
	at := resize(&s.next, len(members)) // where member i's next partition goes
	sum := int32(0)
	for i, n := range counts {
		at[i] = sum
		sum += n
	}
	for i, p := range parts {
		backing[at[owner[i]]] = p
		at[owner[i]]++
	}
	for i, m := range members {
		end := int(at[i])
		out[m] = backing[end-int(counts[i]) : end : end]
	}
	return out, nil
}

// owners returns the index in members of each partition's owner, and how
// many partitions each member owns, both in s's memory.
func (s *balancedScratch) owners(members []string, parts []Partition) (owner, counts []int32) {
	nm := len(members)
	mkeys := resize(&s.mkeys, nm)
	for i, m := range members {
		mkeys[i] = memberKey(m)
	}
	r := s.newRing(mkeys)

	dist, owner, counts := s.primaries(r, parts, nm)
	quota := s.quotas(mkeys, counts, len(parts))
	pool := s.shed(dist, owner, counts, quota)
	s.fill(r, parts, pool, owner, counts, quota)
	return owner, counts
}

// primaries looks up each partition's primary owner, the member of its
// ring point, and its distance to that point (the point's key minus the
// partition's, modulo 2^64), which orders shedding, and counts each
// member's primaries. The points themselves are not kept: only the few
// partitions that are shed need them again, and fill looks those up anew.
func (s *balancedScratch) primaries(r ring, parts []Partition, nm int) (dist []uint64, owner, counts []int32) {
	np := len(parts)
	dist = resize(&s.dist, np)
	owner = resize(&s.owner, np)
	counts = resize(&s.counts, nm)
	clear(counts)
	// dist holds each partition's key until its distance replaces it.
	var topic uint64
	for i, p := range parts {
		if i == 0 || p.Topic != parts[i-1].Topic {
			topic = fnv1a64(p.Topic)
		}
		dist[i] = partitionKey(topic, p.ID)
	}
	// A ring bigger than the partitions, 128 points per member, is
	// walked in the order of the partitions' keys' top bits (a counting
	// sort), so that the walk is nearly sequential: in input order every
	// lookup would be a cache miss once the ring outgrows the cache. A
	// smaller ring stays in the cache better than the partitions' own
	// arrays would if visited in another order, so they are looked up in
	// input order.
	var byKey []int32 // nil for input order
	if r.len() > int32(np) {
		byKey = s.sortByKey(dist)
	}
	for j, k := range dist {
		i := int32(j)
		if byKey != nil {
			i = byKey[j]
			k = dist[i]
		}
		at := r.successor(k)
		dist[i] = r.keys[at] - k
		o := r.owners[at]
		owner[i] = o
		counts[o]++
	}
	return dist, owner, counts
}

// sortByKey returns the indices of keys in the order of the keys' top
// bits, by a counting sort, in s's memory.
func (s *balancedScratch) sortByKey(keys []uint64) []int32 {
	b := max(bits.Len(uint(len(keys))), 1)
	shift := uint(64 - b)
	start := resize(&s.keyStart, 1<<b+1)
	clear(start)
	for _, k := range keys {
		start[k>>shift+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	byKey := resize(&s.byKey, len(keys))
	for i, k := range keys {
		at := start[k>>shift]
		start[k>>shift]++
		byKey[at] = int32(i)
	}
	return byKey
}

// quotas gives the np mod nm members with the most primary partitions
// ceil(np/nm) and the others floor(np/nm), breaking ties by member hash
// and then by name.
func (s *balancedScratch) quotas(mkeys []uint64, counts []int32, np int) []int32 {
	nm := len(mkeys)
	order := resize(&s.order, nm)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(mkeys[a], mkeys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	floor, extra := int32(np/nm), np%nm
	quota := resize(&s.quota, nm)
	for rank, m := range order {
		quota[m] = floor
		if rank < extra {
			quota[m]++
		}
	}
	return quota
}

// shed takes from every member over its quota the partitions farthest
// from their ring point until it is at its quota, lowers counts to match,
// and returns the taken partitions' indices.
func (s *balancedScratch) shed(dist []uint64, owner, counts, quota []int32) []int32 {
	nm := len(counts)
	// Member m keeps its excess farthest partitions in the heap
	// cands[start[m]:start[m]+size[m]].
	start := resize(&s.shedStart, nm+1)
	start[0] = 0
	for m := range nm {
		start[m+1] = start[m] + max(counts[m]-quota[m], 0)
	}
	cands := resize(&s.cands, int(start[nm]))
	size := resize(&s.shedSize, nm)
	clear(size)
	// above[m] is a key that m's heap turns away anything above: its
	// top once it is full, the largest key while it fills, and 0 for a
	// member with nothing to shed. Most partitions are turned away by
	// this one comparison, without a look at the heap.
	above := resize(&s.shedAbove, nm)
	for m := range nm {
		above[m] = 0
		if start[m+1] > start[m] {
			above[m] = math.MaxUint64
		}
	}
	for i, o := range owner {
		key := ^dist[i] // farthest first
		if key > above[o] {
			continue
		}
		lo, hi := start[o], start[o+1]
		if lo == hi {
			continue
		}
		h := lowest(cands[lo : lo+size[o] : hi])
		h.offer(keyed{key, int32(i)}, int(hi-lo))
		size[o] = int32(len(h))
		if len(h) == int(hi-lo) {
			above[o] = h[0].key
		}
	}
	// The pool in partition order, through a bitmap, so that fill reads
	// the partitions in order: in the heaps' order nearly every read is
	// a cache miss once the partitions outgrow the cache.
	marks := resize(&s.poolMarks, (len(owner)+63)/64)
	clear(marks)
	for _, c := range cands {
		marks[c.part/64] |= 1 << (c.part % 64)
	}
	pool := resize(&s.pool, len(cands))[:0]
	for w, word := range marks {
		for ; word != 0; word &= word - 1 {
			pool = append(pool, int32(w*64+bits.TrailingZeros64(word)))
		}
	}
	for m := range nm {
		counts[m] = min(counts[m], quota[m])
	}
	return pool
}

// fill gives the pooled partitions to the members under their quota by
// deferred acceptance: each partition proposes to the members under quota
// in clockwise order from its ring point; a member keeps the proposals
// that travelled least and turns away the rest, which go on to the next.
// The result does not depend on the order of the pool.
func (s *balancedScratch) fill(r ring, parts []Partition, pool []int32, owner, counts, quota []int32) {
	if len(pool) == 0 {
		return
	}
	nm := len(counts)
	// The ring points whose member is under quota. There is at least one,
	// since the pool is not empty, and the pool's partitions propose only
	// to them.
	under := resize(&s.under, nm) // 1 if member m is under quota, else 0
	for m := range nm {
		under[m] = 0
		if counts[m] < quota[m] {
			under[m] = 1
		}
	}
	open := pointSet{words: resize(&s.openWords, int(r.len()+63)/64), n: r.len()}
	for w := range open.words {
		// A word at a time, in a register, and without a branch per
		// point, since about half the members are under quota.
		var word uint64
		for j, m := range r.owners[w*64 : min(w*64+64, len(r.owners))] {
			word |= under[m] << j
		}
		open.words[w] = word
	}
	// held[start[m]:start[m]+size[m]] are the proposals member m holds,
	// each a pool index keyed by the distance it travelled.
	start := resize(&s.fillStart, nm+1)
	start[0] = 0
	for m := range nm {
		start[m+1] = start[m] + max(quota[m]-counts[m], 0)
	}
	size := resize(&s.fillSize, nm)
	clear(size)
	held := resize(&s.held, int(start[nm]))
	key := resize(&s.key, len(pool)) // each pooled partition's key
	at := resize(&s.at, len(pool))   // ring point each pooled partition is proposing at
	queue := resize(&s.queue, len(pool))
	var topic uint64
	for k, p := range pool {
		if k == 0 || parts[p].Topic != parts[pool[k-1]].Topic {
			topic = fnv1a64(parts[p].Topic)
		}
		key[k] = partitionKey(topic, parts[p].ID)
		at[k] = open.next(r.successor(key[k]))
		queue[k] = int32(k)
	}
	// A member keeps its proposals in a heap with the farthest on top,
	// so that turning one away costs a few swaps rather than a scan: a
	// member short of thousands of partitions turns proposals away
	// thousands of times.
	for len(queue) > 0 {
		k := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for {
			pos := at[k]
			m := r.owners[pos]
			p := keyed{r.keys[pos] - key[k], k}
			h := lowest(held[start[m] : start[m]+size[m] : start[m+1]])
			if len(h) < cap(h) {
				h.offer(p, cap(h))
				size[m]++
				break
			}
			if p.less(h[0]) { // m keeps p and turns its farthest away
				k = h[0].part
				h.offer(p, cap(h))
			}
			at[k] = open.next(at[k] + 1)
		}
	}
	for m := range nm {
		for _, p := range held[start[m] : start[m]+size[m]] {
			owner[pool[p.part]] = int32(m)
		}
		counts[m] += size[m]
	}
}

// keyed is a partition index, into the partitions or the pool, with the
// key that orders it: the lowest keys are shed first, and a member under
// quota keeps the proposals of lowest key (distance travelled).
type keyed struct {
	key  uint64
	part int32
}

func (a keyed) less(b keyed) bool {
	return a.key < b.key || a.key == b.key && a.part < b.part
}

// lowest keeps the k items of lowest key offered to it, as a max-heap on
// key, the part breaking ties: once it holds k, an item offered replaces
// its top if it is lower.
type lowest []keyed

func (h *lowest) offer(it keyed, k int) {
	s := *h
	if len(s) < k {
		s = append(s, it)
		for c := len(s) - 1; c > 0; { // sift up
			p := (c - 1) / 2
			if !s[p].less(s[c]) {
				break
			}
			s[p], s[c] = s[c], s[p]
			c = p
		}
		*h = s
		return
	}
	if !it.less(s[0]) {
		return
	}
	s[0] = it
	for p := 0; ; { // sift down
		c := 2*p + 1
		if c >= len(s) {
			break
		}
		if c+1 < len(s) && s[c].less(s[c+1]) {
			c++
		}
		if !s[p].less(s[c]) {
			break
		}
		s[p], s[c] = s[c], s[p]
		p = c
	}
}
