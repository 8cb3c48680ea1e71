package history

import (
	"fmt"
	"time"
)

// Pause is a stretch during which a member's process was stopped (SIGSTOP
// until SIGCONT): it could neither act nor be told anything.
type Pause struct {
	Member   string
	From, To time.Time
	// PastLease: the pause outlasted the member's lease (0.8 of its
	// session timeout), so the member must revoke everything as soon as
	// it runs again.
	PastLease bool
	// Expired: the pause outlasted the member's session, which ZooKeeper
	// ended meanwhile; other members could then rightly take its
	// partitions over while it was stopped.
	Expired bool
}

// Resume is what a member did after a [Pause] that outlasted its lease.
type Resume struct {
	Pause
	// Held: the newest Update the member had received when it was stopped
	// assigned something.
	Held bool
	// Revoked is when, from the Pause's end on, its consumer first took
	// an Update assigning nothing, or stopped (Closed); zero if it never
	// did.
	Revoked time.Time
	// Late: it held something, and Revoked is zero or later than
	// [Options.ResumeBound] after the Pause's end.
	Late bool
}

func (r Resume) describe(at func(time.Time) string) string {
	revoked := "never revoked"
	if !r.Revoked.IsZero() {
		revoked = "revoked at " + at(r.Revoked)
	}
	return fmt.Sprintf("%s, stopped from %s to %s past its lease, %s", r.Member, at(r.From), at(r.To), revoked)
}

// checkPauses applies the pauses to the overlaps found by the sweep and
// times each member's revocation after a pause past its lease; events are
// sorted by time.
//
// A member stopped past its session's end could not release anything nor
// learn that it should: ZooKeeper ended its session, another member
// rightly took its partitions over, and its consumer, resumed, may go on
// with them until it takes the Update that revokes everything. That
// overlap is inherent; what protects the data meanwhile is the fencing
// token (zkalloc's Update.Token): a sink that refuses a token lower than the
// highest it has seen refuses the stopped member's writes once its
// successor has written. So an overlap between the stopped member M and
// another member N is excused, and not a double ownership, when all of
// these hold:
//
//   - the pause is Expired;
//   - N's ownership began after M was stopped and no later than bound
//     after M was resumed (N took over because M's session ended);
//   - the overlap ended no later than bound after M was resumed (M
//     revoked it, and its consumer stopped, at once);
//   - both tokens are known and N's is larger than M's.
//
// Nothing else is excused: a pause that did not outlast the session
// leaves M's claims in place, and M, running again, must hand them over
// as any member does (after its consumer's Ack), even when it is closed
// at once. A bound of zero means no time limit.
func checkPauses(events []Event, pauses []Pause, overlaps []Overlap, bound time.Duration) (kept, excused []Overlap, resumes []Resume) {
	within := func(t, from time.Time) bool { return bound <= 0 || !t.After(from.Add(bound)) }
	for _, o := range overlaps {
		for _, p := range pauses {
			if !p.Expired || o.Open || (p.Member != o.First && p.Member != o.Second) {
				continue
			}
			other, since, tok, otherTok := o.Second, o.SecondSince, o.FirstToken, o.SecondToken
			if p.Member == o.Second {
				other, since, tok, otherTok = o.First, o.FirstSince, o.SecondToken, o.FirstToken
			}
			if since.Before(p.From) || !within(since, p.To) || !within(o.To, p.To) || tok == 0 || otherTok <= tok {
				continue
			}
			o.Excused = fmt.Sprintf("%s was stopped past its session's end, %s took over with token %d, above its %d",
				p.Member, other, otherTok, tok)
			break
		}
		if o.Excused != "" {
			excused = append(excused, o)
		} else {
			kept = append(kept, o)
		}
	}
	for _, p := range pauses {
		if !p.PastLease {
			continue
		}
		r := Resume{Pause: p}
		for _, e := range events {
			if e.Member != p.Member {
				continue
			}
			if e.Time.Before(p.From) {
				switch e.Kind {
				case KindReceived:
					r.Held = len(e.Assigned) > 0
				case KindClosed:
					r.Held = false
				}
				continue
			}
			if !e.Time.Before(p.To) && (e.Kind == KindReceived && len(e.Assigned) == 0 || e.Kind == KindClosed) {
				r.Revoked = e.Time
				break
			}
		}
		r.Late = r.Held && (r.Revoked.IsZero() || !within(r.Revoked, p.To))
		resumes = append(resumes, r)
	}
	return kept, excused, resumes
}
