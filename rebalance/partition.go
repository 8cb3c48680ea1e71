package rebalance

import "github.com/zkalloc/zkalloc/partitions"

// Partition is [partitions.Partition], named here for brevity.
type Partition = partitions.Partition
