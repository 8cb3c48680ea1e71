package rebalance

import (
	"errors"
	"fmt"

	"github.com/zkalloc/zkalloc/partitions"
)

// ErrNoMembers is returned by the built-in strategies when there are
// partitions but no member to give them to.
var ErrNoMembers = errors.New("rebalance: no members")

func errNoMembers(parts []partitions.Partition) error {
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%w for %d partitions", ErrNoMembers, len(parts))
}
