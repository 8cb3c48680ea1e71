package history

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/rebalance"
)

// ErrFailed is wrapped by [Report.Err] when a check fails.
var ErrFailed = errors.New("history: check failed")

// Report is what [Check] found. It is a value: its slices belong to it,
// and its methods only read it, so they are safe for concurrent use.
type Report struct {
	Events     int           // events checked
	Members    int           // distinct member names
	Partitions int           // distinct partitions seen or expected
	Start, End time.Time     // of the first and last events
	FaultsEnd  time.Time     // as used: Options.FaultsEnd or the latest fault's end
	Deadline   time.Duration // Options.Deadline
	// ResumeBound is Options.ResumeBound.
	ResumeBound time.Duration

	// DoubleOwnerships breaks (a): every stretch during which two members
	// held one partition, ordered by start.
	DoubleOwnerships []Overlap
	// Unowned breaks (b): every stretch during which an expected partition
	// was unowned for longer than the deadline allows, or still was at the
	// end, ordered by start.
	Unowned []Gap
	// LongestGaps is the longest unowned stretch of each partition that had
	// one, by partition; LongestGap is the longest of all. Only time when
	// the partition is in the expected set in force counts. A stretch
	// begins when an expected partition that was owned loses its last
	// owner, and ends when it is owned again, when it is removed from the
	// expected set, or at the end of the history. The wait for a first
	// owner, from the start or from when the partition was added to the
	// expected set, counts only if it breaks (b): if it lasts to the end,
	// or, for an added partition, past the deadline.
	LongestGaps []Gap
	LongestGap  Gap

	// Converged tells whether (c) holds at the end; Generation is the live
	// members' common generation (the first live member's if they
	// differ) and Divergence says what differs, if anything.
	Converged  bool
	Generation int64
	Divergence string

	// FaultsByKind counts the faults by kind; Recoveries times the group's
	// convergence after each fault, in the History's order, judged against
	// the expected set in force at each instant.
	FaultsByKind map[string]int
	Recoveries   []Recovery

	// Excused are the overlaps that are no double ownership because one
	// member was stopped past its session's end (see [Pause]).
	Excused []Overlap
	// Resumes are what each member stopped past its lease did once
	// resumed; one that did not revoke everything in time (Late) breaks
	// (e).
	Resumes []Resume
	// SetWrites and SetReads count the writes and reads of the partition
	// set checked for (d); LostWrites breaks it.
	SetWrites, SetReads int
	LostWrites          []LostWrite

	// Anomalies are events the model cannot make sense of: an Ack of an
	// Update the member never received, a reused sequence number,
	// Revoked not being what Assigned lost since the previous Update, or
	// a last [KindExpected] event that disagrees with [Options.Expected].
	// Any of them fails [Report.Err]: the history, or the allocator's
	// Update, is wrong.
	Anomalies []string
}

// Overlap is a stretch of time when two members held one partition.
type Overlap struct {
	Partition rebalance.Partition
	// First held it before Second took it at From.
	First, Second string
	// To is when one of them stopped holding it, or the end of the history
	// if Open.
	From, To time.Time
	Open     bool
	// Unacked: at From, First's newest Update no longer assigned the
	// partition; First held it only because it had not acknowledged the
	// revocation yet.
	Unacked bool
	// FirstSince and SecondSince are when each last began to own the
	// partition (took an Update newly assigning it), and FirstToken and
	// SecondToken their fencing tokens for it at From (0 if not
	// recorded).
	FirstSince, SecondSince time.Time
	FirstToken, SecondToken int64
	// Excused says why the overlap is not a double ownership (a member
	// stopped past its session's end: see [Pause]); empty if it is one.
	Excused string
}

// Duration is To - From.
func (o Overlap) Duration() time.Duration { return o.To.Sub(o.From) }

// String describes o with wall-clock times.
func (o Overlap) String() string { return o.describe(clock) }

func (o Overlap) describe(at func(time.Time) string) string {
	why := "both assigned"
	if o.Unacked {
		why = "revocation not acked by " + o.First
	}
	if o.Excused != "" {
		why += "; excused: " + o.Excused
	}
	return fmt.Sprintf("%s held by %s and %s from %s %s (%s)", o.Partition, o.First, o.Second, at(o.From), until(o.To, o.Open, at), why)
}

// Gap is a stretch of time when a partition was in no member's newest
// Assigned.
type Gap struct {
	Partition rebalance.Partition
	// To is when it was owned again, or the end of the history if Open.
	From, To time.Time
	Open     bool
}

// Duration is To - From.
func (g Gap) Duration() time.Duration { return g.To.Sub(g.From) }

// String describes g with wall-clock times.
func (g Gap) String() string { return g.describe(clock) }

func (g Gap) describe(at func(time.Time) string) string {
	return fmt.Sprintf("%s unowned for %s from %s %s", g.Partition, duration(g.Duration()), at(g.From), until(g.To, g.Open, at))
}

// Recovery is how long after a fault ended the group was first converged:
// every member that had started and not closed agreed on one Generation
// and member list, the list was exactly those members, and they split the
// expected set in force at that instant exactly.
type Recovery struct {
	Fault
	Converged bool          // false if it never was, after the fault's end
	After     time.Duration // from Fault.End; 0 if converged at that instant
}

// maxListed caps the violations of each kind that Err lists.
const maxListed = 3

// late returns the Resumes that break (e).
func (r Report) late() []Resume {
	var out []Resume
	for _, res := range r.Resumes {
		if res.Late {
			out = append(out, res)
		}
	}
	return out
}

// Err returns nil if (a) to (e) hold and the history has no anomalies, or else an error wrapping [ErrFailed] that counts the
// violations of each kind and lists the first few, with times relative to
// the history's start.
func (r Report) Err() error {
	at := r.offset
	var b strings.Builder
	list := func(what string, n int, item func(i int) string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s: %d", what, n)
		for i := range min(n, maxListed) {
			b.WriteString("\n  " + item(i))
		}
		if n > maxListed {
			b.WriteString("\n  …")
		}
	}
	list("(a) double ownerships", len(r.DoubleOwnerships), func(i int) string { return r.DoubleOwnerships[i].describe(at) })
	deadline := "never owned again"
	if r.Deadline > 0 {
		deadline = fmt.Sprintf("unowned past the deadline of %s", duration(r.Deadline))
	}
	list("(b) partitions "+deadline, len(r.Unowned), func(i int) string { return r.Unowned[i].describe(at) })
	if !r.Converged {
		fmt.Fprintf(&b, "\n(c) not converged: %s", r.Divergence)
	}
	list("(d) lost set writes", len(r.LostWrites), func(i int) string { return r.LostWrites[i].describe(at) })
	late := r.late()
	list(fmt.Sprintf("(e) members resumed past their lease that did not revoke everything within %s", duration(r.ResumeBound)), len(late), func(i int) string { return late[i].describe(at) })
	list("anomalies", len(r.Anomalies), func(i int) string { return r.Anomalies[i] })
	if b.Len() == 0 {
		return nil
	}
	return fmt.Errorf("%w:%s", ErrFailed, b.String())
}

// Markdown renders the figures as Markdown tables, for a README or notes:
// one of the checks, and one of recovery times by fault kind if there were
// faults.
func (r Report) Markdown() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, strings.ReplaceAll(v, "|", `\|`)) }
	b.WriteString("| figure | value |\n| --- | --- |\n")
	row("events", fmt.Sprintf("%d from %d members over %s", r.Events, r.Members, duration(r.End.Sub(r.Start))))
	row("partitions", fmt.Sprint(r.Partitions))
	faults := "none"
	if len(r.FaultsByKind) > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(r.FaultsByKind)) {
			kinds = append(kinds, fmt.Sprintf("%s ×%d", k, r.FaultsByKind[k]))
		}
		faults = strings.Join(kinds, ", ") + ", the last ending at " + r.offset(r.FaultsEnd)
	}
	row("faults", faults)
	row("(a) double ownerships", fmt.Sprint(len(r.DoubleOwnerships)))
	deadline := "no deadline"
	if r.Deadline > 0 {
		deadline = "deadline " + duration(r.Deadline)
	}
	row("(b) partitions left unowned", fmt.Sprintf("%d (%s)", len(r.Unowned), deadline))
	gap := "none"
	if g := r.LongestGap; g != (Gap{}) {
		gap = fmt.Sprintf("%s (%s at %s)", duration(g.Duration()), g.Partition, r.offset(g.From))
	}
	row("longest unowned gap", gap)
	conv := fmt.Sprintf("yes, generation %d", r.Generation)
	if !r.Converged {
		conv = "no: " + r.Divergence
	}
	row("(c) converged", conv)
	if len(r.Excused) > 0 || len(r.Resumes) > 0 {
		row("overlaps excused (member stopped past its session)", fmt.Sprint(len(r.Excused)))
		row("(e) members stopped past their lease, late to revoke", fmt.Sprintf("%d of %d", len(r.late()), len(r.Resumes)))
	}
	if r.SetWrites > 0 || r.SetReads > 0 {
		row("(d) lost set writes", fmt.Sprintf("%d (%d writes, %d reads)", len(r.LostWrites), r.SetWrites, r.SetReads))
	}
	row("anomalies", fmt.Sprint(len(r.Anomalies)))

	if len(r.Recoveries) == 0 {
		return b.String()
	}
	type kind struct {
		n, stuck int
		max, sum time.Duration
	}
	kinds := make(map[string]*kind)
	for _, rec := range r.Recoveries {
		k := kinds[rec.Kind]
		if k == nil {
			k = new(kind)
			kinds[rec.Kind] = k
		}
		k.n++
		if !rec.Converged {
			k.stuck++
			continue
		}
		k.sum += rec.After
		k.max = max(k.max, rec.After)
	}
	b.WriteString("\n| fault | count | converged after, mean | max | never converged |\n| --- | --- | --- | --- | --- |\n")
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		k := kinds[name]
		mean, most := "-", "-"
		if ok := k.n - k.stuck; ok > 0 {
			mean, most = duration(k.sum/time.Duration(ok)), duration(k.max)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d |\n", name, k.n, mean, most, k.stuck)
	}
	return b.String()
}

// offset renders t relative to the history's start: "+1.5s".
func (r Report) offset(t time.Time) string { return offset(r.Start, t) }

func offset(start, t time.Time) string {
	if start.IsZero() {
		return clock(t)
	}
	return "+" + duration(t.Sub(start))
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

func until(to time.Time, open bool, at func(time.Time) string) string {
	if open {
		return "to the end (" + at(to) + ")"
	}
	return "to " + at(to)
}

// duration rounds d to milliseconds unless it is shorter.
func duration(d time.Duration) string {
	if d >= time.Millisecond || d <= -time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
