package partitions

import (
	"fmt"
	"slices"

	"github.com/zkalloc/zkalloc/rebalance"
)

// View is one reading of the shared partition set: every partition of
// every topic, sorted, and the topics whose data could not be read.
type View struct {
	Partitions []rebalance.Partition // sorted by [rebalance.Compare], distinct
	// Zxid is the newest change the view contains: the largest of the
	// topic nodes' mzxid and the partitions node's pzxid. The view is the
	// set as it was at that zxid, so two views with one Zxid hold the same
	// partitions: a change written in one multi, such as one
	// AddPartitions of several topics, is in a view whole or not at all.
	Zxid      int64
	SessionID int64 // the session the set was read in
	// Reconnects is the session's [session.State.Reconnects] when the set
	// was read: a view older than the latest reconnection may be stale.
	Reconnects uint64
	// Corrupt lists the topics whose data could not be read, with why;
	// their partitions are not in Partitions.
	Corrupt []TopicError
	// Changed, if not nil, reports whether the set may have changed since
	// this view was read: a watch the reading armed has fired, and a
	// newer view is on its way. It never blocks and is safe for
	// concurrent use. Nil means the backend cannot tell (in-memory ones).
	// Read it through [View.Outdated]; [View.Equal] ignores it.
	Changed func() bool
}

// Outdated reports whether v may no longer hold: see [View.Changed].
// False if Changed is nil.
func (v View) Outdated() bool { return v.Changed != nil && v.Changed() }

// TopicError says why a topic's data was rejected.
type TopicError struct {
	Topic string
	Err   error
}

// Error says which topic and why: topic "name": the reason.
func (e TopicError) Error() string { return fmt.Sprintf("topic %q: %v", e.Topic, e.Err) }

// Equal reports whether v and w say the same: the same partitions and
// corrupt topics (by name and error text), read at the same zxid in the
// same session and connection (not Changed). The set publishes no view equal to the
// last, and its readers can skip one.
func (v View) Equal(w View) bool {
	return v.Zxid == w.Zxid && v.SessionID == w.SessionID && v.Reconnects == w.Reconnects &&
		slices.Equal(v.Partitions, w.Partitions) && slices.EqualFunc(v.Corrupt, w.Corrupt, sameTopicError)
}

// sameTopicError compares two corrupt topics by name and error text.
func sameTopicError(a, b TopicError) bool {
	return a.Topic == b.Topic && errText(a.Err) == errText(b.Err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
