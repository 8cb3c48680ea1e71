package rebalance

import (
	"fmt"
	"slices"
)

// Nobody is the index, in a [Placement]'s Owner or Home, of no member:
// the partition has no owner, or no home.
const Nobody = -1

// Placement is the state the sticky assignment ([Sticky]) carries from
// one assignment to the next: who owns each partition, and, for a
// partition taken from a member that departed or was drained, that
// member's name, its home, so that the member gets it back when it
// returns. It is laid out as parallel slices rather than maps so that it
// costs no hashing per partition, and so that it can be stored as it is:
// a table of names and two small integers per partition.
//
//   - Parts lists the partitions, sorted by [Compare] and distinct.
//   - Owner[i] is the index in Names of Parts[i]'s owner, or [Nobody].
//   - Home[i] is the index in Names of the member Parts[i] was taken from
//     when that member departed or was drained, or [Nobody]. Home may be
//     nil, meaning no partition has a home.
//   - Names lists the names referred to, distinct.
//
// The zero Placement is valid: nothing is owned (a first assignment).
// A Placement returned by [Sticky] is canonical: Names is sorted and holds
// only names referred to, and no partition's home is its owner; so two
// members computing from the same inputs get equal Placements. Its
// growth is bounded: Names holds at most one name per partition plus the
// members, Home one entry per partition.
type Placement struct {
	Names []string
	Parts []Partition
	Owner []int32
	Home  []int32
}

// PlacementFrom returns the Placement in which each member of owned owns
// its partitions and no partition has a home: the start of a sticky
// assignment for a group that had another assignment before (a group
// moving from [Balanced] to [Sticky], for instance). It returns an error
// wrapping [ErrInvalid] if a name is invalid or a partition is listed
// twice. It does not modify owned.
func PlacementFrom(owned map[string][]Partition) (Placement, error) {
	var pl Placement
	for m := range owned {
		if err := ValidateName(m); err != nil {
			return Placement{}, fmt.Errorf("owner: %w", err)
		}
		pl.Names = append(pl.Names, m)
	}
	slices.Sort(pl.Names)
	type owned1 struct {
		p Partition
		o int32
	}
	var all []owned1
	for i, m := range pl.Names {
		for _, p := range owned[m] {
			all = append(all, owned1{p, int32(i)})
		}
	}
	slices.SortFunc(all, func(a, b owned1) int { return Compare(a.p, b.p) })
	pl.Parts = make([]Partition, len(all))
	pl.Owner = make([]int32, len(all))
	for i, a := range all {
		if i > 0 && all[i-1].p == a.p {
			return Placement{}, fmt.Errorf("%w placement: partition %s owned by both %q and %q", ErrInvalid, a.p, pl.Names[all[i-1].o], pl.Names[a.o])
		}
		pl.Parts[i], pl.Owner[i] = a.p, a.o
	}
	return pl, nil
}

// Owners returns each owner's partitions, sorted by [Compare]: the
// assignment pl records. Names that own nothing are not keys.
func (pl Placement) Owners() map[string][]Partition {
	out := make(map[string][]Partition)
	for i, o := range pl.Owner {
		if o != Nobody {
			out[pl.Names[o]] = append(out[pl.Names[o]], pl.Parts[i])
		}
	}
	return out
}

// Homes returns the home of each partition that has one.
func (pl Placement) Homes() map[Partition]string {
	out := make(map[Partition]string)
	for i, h := range pl.Home {
		if h != Nobody {
			out[pl.Parts[i]] = pl.Names[h]
		}
	}
	return out
}

// Validate checks everything [Placement] documents: the lengths, the
// indices in range, Names valid and distinct, and Parts valid, sorted by
// [Compare] and distinct. It is for a Placement read back from storage;
// [Sticky] checks the same as it goes, and returns an error wrapping
// [ErrInvalid] for a Placement that breaks them.
func (pl Placement) Validate() error {
	if err := pl.validate(); err != nil {
		return err
	}
	for i, p := range pl.Parts {
		if i == 0 || p.Topic != pl.Parts[i-1].Topic {
			if err := ValidateTopic(p.Topic); err != nil {
				return fmt.Errorf("placement: %w", err)
			}
		}
		if p.ID < 0 {
			return fmt.Errorf("%w placement: %s has a negative ID", ErrInvalid, p)
		}
		if i > 0 && Compare(pl.Parts[i-1], p) >= 0 {
			return fmt.Errorf("%w placement: %s after %s: partitions not sorted and distinct", ErrInvalid, p, pl.Parts[i-1])
		}
	}
	return nil
}

// validate checks the shape [Placement] documents, but for the order of
// Parts, which [Sticky] checks as it merges, so that a record read back
// from storage cannot make Sticky index out of range or give a partition
// twice.
func (pl Placement) validate() error {
	n := len(pl.Parts)
	if len(pl.Owner) != n || (pl.Home != nil && len(pl.Home) != n) {
		return fmt.Errorf("%w placement: %d partitions, %d owners, %d homes", ErrInvalid, n, len(pl.Owner), len(pl.Home))
	}
	seen := make(map[string]bool, len(pl.Names))
	for _, m := range pl.Names {
		if err := validName(m); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
		if seen[m] {
			return fmt.Errorf("%w placement: name %q listed twice", ErrInvalid, m)
		}
		seen[m] = true
	}
	// Sticky checks the order of Parts as it reads them.
	names := int32(len(pl.Names))
	for i, p := range pl.Parts {
		if o := pl.Owner[i]; o < Nobody || o >= names {
			return fmt.Errorf("%w placement: owner %d of %s out of range", ErrInvalid, o, p)
		}
		if pl.Home != nil {
			if h := pl.Home[i]; h < Nobody || h >= names {
				return fmt.Errorf("%w placement: home %d of %s out of range", ErrInvalid, h, p)
			}
		}
	}
	return nil
}
