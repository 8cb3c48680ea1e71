package record

// Rank is rank, for the black-box tests to find who computes first.
func Rank(live []string, me string, mz, pz int64) int { return rank(live, me, mz, pz) }

// SetMultiBytes sets the most one multi of r may carry, to force the
// split path with a small record.
func SetMultiBytes(r *Runner, n int) { r.multiBytes = n }

// CachedShares lists the share nodes whose data r holds.
func CachedShares(r *Runner) int { return len(r.data) }

// AwaitAfter waits until the work r's last write left (the head's watch
// armed again, the old nodes deleted) is done. r must not be in Assign.
func AwaitAfter(r *Runner) {
	if r.after != nil {
		<-r.after.done
	}
}

// Counts are RecordCounts by name, for the tests' messages.
type Counts struct{ Writes, FailedCAS uint64 }

// Counts returns r's RecordCounts as Counts.
func (r *Runner) Counts() Counts {
	w, c := r.RecordCounts()
	return Counts{Writes: w, FailedCAS: c}
}
