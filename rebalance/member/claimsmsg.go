package member

import "github.com/zkalloc/zkalloc/rebalance"

// Temporary until the claims package lands.
type (
	Desired = rebalance.Desired
	Held    = rebalance.Held
)
