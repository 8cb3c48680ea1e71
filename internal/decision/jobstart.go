package decision

// JobStart is the core's answer to [Core.StartJob].
type JobStart int

const (
	// JobRun: run the job now.
	JobRun JobStart = iota
	// JobWait: keep the job and ask again when a view arrives; a newer
	// view is on its way.
	JobWait
	// JobDrop: drop the job; it is not the newest, or its views are not:
	// the core asks for another if the newest views need one.
	JobDrop
)

// StartJob says whether job, returned by [Core.Ready], may run now.
// outdated is whether the newest member view or partition view the shell
// has taken (the last given to [Core.MembersRead] and
// [Core.PartitionsRead], even if the core ignored it as equal to the one
// before) is outdated, as their Outdated methods say at this moment: the
// shell samples them just before it asks.
//
// A job runs only on views that both still hold: each view is exact at
// its zxid, and since the actors read over one connection, on which a
// watch's event comes before any later reply, "neither outdated" means
// that the member list, the seats and the set are, now, as both views
// say, and so were at the newer of their zxids, the job's generation.
// Without it, a member could compute from a member list older than a
// change made before the set's zxid, and report the set's zxid, as a
// member that had both (issue 26). Two members that report one
// generation have then computed from the same member list, seats and
// partition set.
//
// A job made from views that are no longer the newest is dropped: the
// newer views have started a new one, or will once they settle, if they
// need one.
func (c *Core) StartJob(job Job, outdated bool) JobStart {
	switch {
	case job.ID != c.job.ID:
		return JobDrop
	case job.MembersZxid != c.members.Zxid || job.PartitionsZxid != c.parts.Zxid ||
		job.session != c.st.SessionID || job.connects != c.st.Reconnects:
		c.jobOpen = false // no answer will come: do not wait for one
		return JobDrop
	case outdated:
		return JobWait
	}
	// The stall is counted from the start: a job that waited for a newer
	// view has not run, and is not late.
	c.jobRun, c.jobAt, c.jobLate = true, c.now, false
	return JobRun
}
