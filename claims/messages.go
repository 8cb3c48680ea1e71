package claims

import "github.com/zkalloc/zkalloc/partitions"

// The member actor and the claims actor talk through two snapshots,
// each delivered latest-wins: the member actor says which claims it
// wants ([Desired]), the claims actor answers which it holds ([Held]).
// Both are full states, so a skipped one loses nothing.

// Desired is the set of ownership claims the member actor wants held
// in one session: the partitions it is assigned plus those its consumer
// may still be working on. Claims held outside it are released.
type Desired struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                 // grows with every Desired, echoed by Held
	Want       []partitions.Partition // sorted
}

// Held is the set of claims the claims actor holds, verified to belong to
// the session it names.
type Held struct {
	SessionID  int64
	Reconnects uint64
	Seq        uint64                 // the Desired.Seq this answers
	Held       []partitions.Partition // sorted
}
