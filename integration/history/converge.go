package history

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// convergence follows, during the sweep, whether the group is converged at
// each instant: some member is active (received since it last started),
// all active members' newest Updates carry one Generation and one member
// list, that list is exactly the active members, and their Assigned split
// the expected set in force at that instant exactly. It keeps the
// stretches of time when that held, to time the recovery from each fault.
// Unlike the final check (c), it cannot know which members are meant to
// be live, so it trusts the history: a member is active from its first
// Update to its Close.
type convergence struct {
	gens   map[int64]int  // active members per newest Generation
	views  map[string]int // active members per newest member list
	active map[string]bool
	key    string // viewKey of the active members, valid unless dirty
	dirty  bool
	bad    int // partitions not owned as the expected set in force wants (see partState.bad)

	on    bool // converged since `since`
	since time.Time
	spans []span
}

// span is a stretch of converged time, [from, to), or the instant from if
// from equals to; open spans last to the end of the history.
type span struct {
	from, to time.Time
	open     bool
}

func (v *convergence) init() {
	v.gens = make(map[int64]int)
	v.views = make(map[string]int)
	v.active = make(map[string]bool)
}

func (v *convergence) start(name string) { v.active[name], v.dirty = true, true }
func (v *convergence) stop(name string)  { delete(v.active, name); v.dirty = true }

func (v *convergence) add(gen int64, view string) {
	v.gens[gen]++
	v.views[view]++
}

func (v *convergence) remove(gen int64, view string) {
	if v.gens[gen]--; v.gens[gen] == 0 {
		delete(v.gens, gen)
	}
	if v.views[view]--; v.views[view] == 0 {
		delete(v.views, view)
	}
}

// holds reports whether the group is converged now.
func (v *convergence) holds() bool {
	if len(v.active) == 0 || len(v.gens) != 1 || len(v.views) != 1 || v.bad != 0 {
		return false
	}
	if v.dirty {
		v.key = viewKey(slices.Collect(maps.Keys(v.active)))
		v.dirty = false
	}
	return v.views[v.key] > 0
}

// observe notes the state after an event at t.
func (v *convergence) observe(t time.Time) {
	switch now := v.holds(); {
	case now && !v.on:
		v.on, v.since = true, t
	case !now && v.on:
		v.on = false
		v.spans = append(v.spans, span{from: v.since, to: t})
	}
}

// recoveries counts faults by kind and times, for each fault, how long
// after its end the group was first converged.
func (v *convergence) recoveries(faults []Fault, end time.Time) (map[string]int, []Recovery) {
	if len(faults) == 0 {
		return nil, nil
	}
	spans := v.spans
	if v.on {
		spans = append(spans, span{from: v.since, to: end, open: true})
	}
	byKind := make(map[string]int)
	recs := make([]Recovery, 0, len(faults))
	for _, f := range faults {
		byKind[f.Kind]++
		rec := Recovery{Fault: f}
		i := slices.IndexFunc(spans, func(s span) bool {
			return s.open || s.to.After(f.End) || s.from.Equal(s.to) && !s.from.Before(f.End)
		})
		if i >= 0 {
			rec.Converged = true
			if at := spans[i].from; at.After(f.End) {
				rec.After = at.Sub(f.End)
			}
		}
		recs = append(recs, rec)
	}
	return byKind, recs
}

// viewKey is a comparable key for a member list, whatever its order.
func viewKey(members []string) string {
	ms := slices.Clone(members)
	slices.Sort(ms)
	return strings.Join(slices.Compact(ms), "\x00")
}

// maxProblems caps the problems listed in a Divergence.
const maxProblems = 5

// converged checks (c) at the end of the history: every member of
// opts.Live has a newest Update, all carry one Generation and one member
// list equal to the live members, and their Assigned cover the expected
// set, each partition exactly once. It returns the common generation and,
// if not converged, what differs.
func (c *checker) converged() (ok bool, gen int64, divergence string) {
	live := slices.Clone(c.opts.Live)
	slices.Sort(live)
	live = slices.Compact(live)
	var problems []string
	var ms []*memberState
	for _, name := range live {
		i, known := c.mids[name]
		if !known || !c.members[i].active {
			problems = append(problems, fmt.Sprintf("live member %s has no Update since it last started", name))
			continue
		}
		ms = append(ms, c.members[i])
	}
	if len(live) == 0 && len(c.expected) > 0 {
		problems = append(problems, "no live members")
	}

	gens := make(map[int64][]string)
	views := make(map[string][]string)
	for _, m := range ms {
		gens[m.gen] = append(gens[m.gen], m.name)
		views[m.view] = append(views[m.view], m.name)
	}
	if len(gens) > 1 {
		problems = append(problems, "generations differ: "+groups(gens, func(g int64) string { return fmt.Sprint(g) }))
	}
	if len(views) > 1 {
		problems = append(problems, "member lists differ: "+groups(views, showView))
	}
	if liveKey := viewKey(live); len(views) == 1 && len(ms) > 0 && ms[0].view != liveKey {
		problems = append(problems, fmt.Sprintf("Updates list members %s, live are %v", showView(ms[0].view), live))
	}

	owners := make([][]string, len(c.parts))
	for _, m := range ms {
		for _, id := range m.latest {
			owners[id] = append(owners[id], m.name)
		}
	}
	ids := make([]int32, len(c.parts))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int { return rebalance.Compare(c.parts[a], c.parts[b]) })
	for _, id := range ids {
		switch o, p := owners[id], c.parts[id]; {
		case c.state[id].expected && len(o) == 0:
			problems = append(problems, fmt.Sprintf("%s assigned to no live member", p))
		case c.state[id].expected && len(o) > 1:
			problems = append(problems, fmt.Sprintf("%s assigned to %s", p, strings.Join(o, " and ")))
		case !c.state[id].expected && len(o) > 0:
			problems = append(problems, fmt.Sprintf("%s assigned to %s but not expected", p, strings.Join(o, " and ")))
		}
	}

	if len(ms) > 0 {
		gen = ms[0].gen
	}
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", more))
	}
	return len(problems) == 0, gen, strings.Join(problems, "; ")
}

// groups renders members grouped by a value, sorted as text: "7 [a b], 8 [c]".
func groups[K comparable](by map[K][]string, show func(K) string) string {
	parts := make([]string, 0, len(by))
	for k, names := range by {
		parts = append(parts, fmt.Sprintf("%s %v", show(k), names))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// showView renders a viewKey as "[a b]".
func showView(key string) string {
	if key == "" {
		return "[]"
	}
	return "[" + strings.ReplaceAll(key, "\x00", " ") + "]"
}
