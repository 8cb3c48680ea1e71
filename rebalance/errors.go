package rebalance

import (
	"errors"
	"fmt"
)

// ErrNoMembers is returned by the built-in strategies when there are
// partitions but no member to give them to.
var ErrNoMembers = errors.New("rebalance: no members")

func errNoMembers(parts []Partition) error {
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%w for %d partitions", ErrNoMembers, len(parts))
}
