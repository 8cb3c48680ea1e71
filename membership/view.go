package membership

import "slices"

// View is one reading of the group's member list: the members, and the
// seats with DepartureDelay.
type View struct {
	Members []string // sorted, distinct
	// Zxid is the zxid of the last change to the list (the members
	// node's pzxid), or to the seats' or the drain marks' list if newer.
	// The view is the group as it was at that zxid: two views with one
	// Zxid hold the same members, seats and drain marks.
	Zxid      int64
	SessionID int64 // the session the list was read in
	// Reconnects is the session's [session.State.Reconnects] when the list
	// was read: a view older than the latest reconnection may be stale.
	Reconnects uint64
	// Seats are the group's seat nodes, sorted by name, read only with
	// DepartureDelay; Zxid then covers their list too.
	Seats []Seat
	// Weights, parallel to Members, are the members' weights as their
	// nodes give them ([Info.Weight]; 1 for a node without one); nil
	// when every weight is 1 or the backend does not read them. Read
	// them through [View.Weight].
	Weights []int
	// Drained are the names under the group's drained/ node, sorted:
	// the members an operator drained (`zkalloc drain`), live or not.
	// Read only by members of the sticky strategy; Zxid then covers their
	// list too.
	Drained []string
	// Balanced are the live members whose nodes name the balanced
	// strategy, sorted; read only by members of the sticky strategy,
	// which compute Balanced's assignment while any is left, so that a
	// group moves from balanced to sticky by a rolling upgrade.
	Balanced []string
	// Changed, if not nil, reports whether the list, the seats or the
	// drain marks may have changed since this view was read: a watch the
	// reading armed has fired, and a newer view is on its way. It never
	// blocks and is safe for concurrent use. Nil means the backend cannot tell (in-memory
	// ones). Read it through [View.Outdated]; [View.Equal] ignores it.
	Changed func() bool
}

// Outdated reports whether v may no longer hold: see [View.Changed].
// False if Changed is nil.
func (v View) Outdated() bool { return v.Changed != nil && v.Changed() }

// Equal reports whether v and w list the same members, read at the same
// zxid in the same session and connection. It ignores Changed.
func (v View) Equal(w View) bool {
	return v.Zxid == w.Zxid && v.SessionID == w.SessionID && v.Reconnects == w.Reconnects && slices.Equal(v.Members, w.Members) && slices.Equal(v.Seats, w.Seats) &&
		slices.Equal(v.Weights, w.Weights) && slices.Equal(v.Drained, w.Drained) && slices.Equal(v.Balanced, w.Balanced)
}

// Weight returns member's weight in v: its entry of Weights, or 1 if it
// has none (not a live member, or Weights nil).
func (v View) Weight(member string) int {
	if i, found := slices.BinarySearch(v.Members, member); found && i < len(v.Weights) {
		return v.Weights[i]
	}
	return 1
}

// IsDrained reports whether member is drained in v.
func (v View) IsDrained(member string) bool {
	_, found := slices.BinarySearch(v.Drained, member)
	return found
}

// Seat is a member's seat node, <group>/seats/<member> (DepartureDelay):
// persistent, so it outlives the member's session, and deleted by the
// first member whose departure timer for it runs out.
type Seat struct {
	Name string
	// Version is the node's data version, read only for a seat without a
	// live member (-1 otherwise). Each join bumps it, so that a deletion
	// asked for from an older departure fails.
	Version int32
}

// Away returns the seats of v without a live member, sorted.
func (v View) Away() []Seat {
	var away []Seat
	for _, s := range v.Seats {
		if _, live := slices.BinarySearch(v.Members, s.Name); !live {
			away = append(away, s)
		}
	}
	return away
}

// Seated returns the members of v and the names of its seats, sorted and
// distinct: the list the assignment is computed over.
func (v View) Seated() []string {
	if len(v.Seats) == 0 {
		return v.Members
	}
	out := slices.Clone(v.Members)
	for _, s := range v.Seats {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
