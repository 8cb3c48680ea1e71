package rebalance

// StickyStrategy is the default strategy of an Allocator: the sticky
// assignment over the group's agreed record. The members keep the
// previous assignment in ZooKeeper and each change computes the next one
// from it with [Sticky], so that only the partitions that must move
// move: those of departed or drained members, and the excess of members
// above their share. Members' weights (Config.Weight) set their shares,
// and `zkalloc drain` empties a member. docs/sticky.md has the rules and
// the record.
//
// The Allocator recognizes StickyStrategy and runs it over the record
// itself; Assign, which has no record, gives what a group's first record
// holds for members of weight 1: [Balanced]'s assignment (a group that
// ran Balanced over the same members and partitions moves nothing when
// it starts the record). A custom strategy cannot wrap it and keep the
// record.
//
// StickyStrategy is safe for concurrent use.
var StickyStrategy Strategy = stickyStrategy{}

type stickyStrategy struct{}

func (stickyStrategy) builtin()     {}
func (stickyStrategy) Name() string { return "sticky" }

func (stickyStrategy) Assign(members []string, parts []Partition) (map[string][]Partition, error) {
	return balanced{}.Assign(members, parts)
}
