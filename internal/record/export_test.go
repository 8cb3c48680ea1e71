package record

import (
	"time"

	"github.com/zkalloc/zkalloc/internal/decision"
)

// Rank is rank, for the black-box tests to find who computes first.
func Rank(live []string, me string, mz, pz int64) int { return rank(live, me, mz, pz) }

// Delay is how long me waits before it computes job's record.
func Delay(job decision.Job, me string, step time.Duration) time.Duration {
	return time.Duration(rank(job.Live, me, job.MembersZxid, job.PartitionsZxid)) * step
}

// SetMultiBytes sets the most one multi of r may carry, to force the
// split path with a small record.
func SetMultiBytes(r *Runner, n int) { r.multiBytes = n }

// CachedShares lists the share nodes whose data r holds.
func CachedShares(r *Runner) int { return len(r.data) }
