// Package retry holds the retry policy of the actors' ZooKeeper work.
package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Backoff returns the policy for retrying ZooKeeper operations inside an
// actor: a first retry after about 50ms, growing to at most 2s apart, and
// never giving up (backoff's default would stop after 15 minutes, leaving
// a member silently idle). Actors ask it for the next delay and wait on
// their own injected clock.
func Backoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0
	return b
}
