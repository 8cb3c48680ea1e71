package members

import (
	"slices"

	"github.com/zkalloc/zkalloc/rebalance"
)

// drained returns the drain marks of a reading of <group>/drained, names,
// sorted and never nil: an operator's `zkalloc drain` creates one for a
// member, live or not (drained while down, or departed: the strategy
// ignores a mark without a member). A name that is not a valid member
// name is left out, and logged once with its path, as long as it stays.
func (m *Actor) drained(names []string) []string {
	if m.drainWarned == nil {
		m.drainWarned = make(map[string]struct{})
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		if rebalance.ValidateName(name) == nil && len(name) <= rebalance.MaxNameLen {
			out = append(out, name)
			continue
		}
		if _, done := m.drainWarned[name]; !done {
			m.drainWarned[name] = struct{}{}
			m.cfg.Logger.Warn("zkalloc: ignoring a drain mark that is not a member's name", "path", m.cfg.Paths.DrainedMember(short(name)))
		}
	}
	if len(m.drainWarned) > 0 {
		listed := make(map[string]struct{}, len(names))
		for _, name := range names {
			listed[name] = struct{}{}
		}
		for name := range m.drainWarned {
			if _, ok := listed[name]; !ok {
				delete(m.drainWarned, name) // gone: a mark of that name later is logged again
			}
		}
	}
	slices.Sort(out)
	return out
}
