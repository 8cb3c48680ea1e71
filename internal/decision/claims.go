package decision

import "github.com/zkalloc/zkalloc/rebalance"

// The core and the claims actor talk through two snapshots, each
// delivered latest-wins: the core says which claims it wants ([Want],
// in [Ready]), the claims actor answers which it holds ([Held], given to
// [Core.ClaimsHeld]). Both are full states, so a skipped one loses nothing.

// Want is the set of ownership claims the core wants held in one
// session: the partitions it is assigned plus those its consumer may
// still be working on. Claims held outside it are released.
type Want struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                // grows with every Want, echoed by Held
	Partitions []rebalance.Partition // sorted
}

// Held is the set of claims the claims actor holds, verified to belong to
// the session it names.
type Held struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                // the Want.Seq this answers
	Partitions []rebalance.Partition // sorted
	// Tokens[i] is the creation zxid of Held[i]'s claim node: the
	// partition's fencing token while this session keeps the claim.
	Tokens []int64
	// Vanished is every claim of this session found deleted from outside
	// (by an operator or a script) while its hold record still names this
	// session, sorted. Nobody else can take such a partition until this
	// session releases the record or ends, but the member must stop using
	// it at once: it is not in Held, and the member revokes it. Its
	// record is released once the partition is no longer wanted, and only
	// then can it be claimed again (by this member too).
	Vanished []rebalance.Partition
}
