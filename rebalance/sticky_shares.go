package rebalance

import (
	"cmp"
	"fmt"
	"slices"
)

// MaxWeight is the largest [Member.Weight] accepted. It keeps the
// arithmetic of [Shares] (partitions × weight) far inside int64 and is
// well beyond any ratio of machines a group could need.
const MaxWeight = 1_000_000

// Member is one member of a group as the sticky assignment ([Sticky],
// [Shares]) sees it: its name, its weight and whether it is drained. A
// member whose Weight is 0 or that is Drained gets no partition, and
// gives up every partition it owned, as a departed member does; it stays
// a member (it keeps its name in the result, with no partitions).
type Member struct {
	Name    string
	Weight  int // 0 to MaxWeight; a member's share is proportional to it
	Drained bool
}

// active reports whether m takes a share.
func (m Member) active() bool { return m.Weight > 0 && !m.Drained }

// Shares returns how many of n partitions each member gets: a member's
// share is n × weight / total weight, rounded by largest remainder so that
// the shares sum to n. Each member's share is the floor of its exact
// share, and the n − Σfloor partitions left over go one each to the
// members with the largest remainders (n × weight mod total weight).
// Among members with equal remainders, those for which one more partition
// saves a move come first (held[name] > floor: they already hold more
// than the floor, so the extra partition is one they keep rather than one
// they give up), then names in byte order. With equal weights every
// remainder is equal, so the extra partitions go to the members that
// already hold more, then to the first names.
//
// held maps a member to the number of the n partitions it owns now; nil
// means nobody owns any (ties then go by name). Every member is a key of
// the result; members with weight 0 or drained get 0. Shares returns an
// error wrapping [ErrInvalid] for an invalid or duplicate name, a weight
// outside 0 to [MaxWeight], or a negative n, and one wrapping
// [ErrNoMembers] if n > 0 and no member has a positive weight and is not
// drained: nobody can take the partitions.
//
// Shares is what [Sticky] uses. It is safe for concurrent use and does
// not modify its arguments.
func Shares(members []Member, n int, held map[string]int) (map[string]int, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w partition count %d", ErrInvalid, n)
	}
	ms, err := sortedMembers(members)
	if err != nil {
		return nil, err
	}
	h := make([]int, len(ms))
	for i, m := range ms {
		h[i] = held[m.Name]
	}
	sh, err := shares(ms, n, h)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(ms))
	for i, m := range ms {
		out[m.Name] = sh[i]
	}
	return out, nil
}

// sortedMembers validates members and returns them sorted by name, the
// slice itself if it already is.
func sortedMembers(members []Member) ([]Member, error) {
	byName := func(a, b Member) int { return cmp.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(members, byName) {
		members = slices.Clone(members)
		slices.SortFunc(members, byName)
	}
	for i, m := range members {
		if err := validName(m.Name); err != nil {
			return nil, fmt.Errorf("member: %w", err)
		}
		if m.Weight < 0 || m.Weight > MaxWeight {
			return nil, fmt.Errorf("%w member %q: weight %d, want 0 to %d", ErrInvalid, m.Name, m.Weight, MaxWeight)
		}
		if i > 0 && members[i-1].Name == m.Name {
			return nil, fmt.Errorf("%w member %q: listed twice", ErrInvalid, m.Name)
		}
	}
	return members, nil
}

// shares computes [Shares] for members sorted by name, held[i] being what
// members[i] holds now.
func shares(members []Member, n int, held []int) ([]int, error) {
	var total int64
	for _, m := range members {
		if m.active() {
			total += int64(m.Weight)
		}
	}
	out := make([]int, len(members))
	if total == 0 {
		if n > 0 {
			return nil, fmt.Errorf("%w with a positive weight, not drained, for %d partitions", ErrNoMembers, n)
		}
		return out, nil
	}
	type cand struct {
		i     int
		rem   int64
		saves bool
	}
	var cands []cand
	left := n
	for i, m := range members {
		if !m.active() {
			continue
		}
		exact := int64(n) * int64(m.Weight)
		out[i] = int(exact / total)
		left -= out[i]
		if rem := exact % total; rem != 0 {
			cands = append(cands, cand{i, rem, held[i] > out[i]})
		}
	}
	if left == 0 {
		return out, nil
	}
	// left < len(cands): each remainder is below total, so their sum,
	// left × total, is below len(cands) × total.
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.rem, a.rem); c != 0 {
			return c
		}
		if a.saves != b.saves {
			if a.saves {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	})
	for _, c := range cands[:left] {
		out[c.i]++
	}
	return out, nil
}

// validName is [ValidateName] with a fast path for printable ASCII, which
// is what most names are: at a thousand members, ValidateName's
// per-rune Unicode tables cost more than the rest of [Sticky]'s checks.
func validName(name string) error {
	if name == "" || name == "." || name == ".." {
		return ValidateName(name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e || c == '/' {
			return ValidateName(name)
		}
	}
	return nil
}
