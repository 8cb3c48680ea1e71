package history_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start of every scripted history.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// script drives a Recorder on a fake clock: every step names its time in
// milliseconds after t0, and Updates are named by labels for Acks.
type script struct {
	tb   testing.TB
	now  time.Time
	rec  *history.Recorder
	seqs map[string]int
}

func newScript(tb testing.TB) *script {
	s := &script{tb: tb, now: t0, seqs: make(map[string]int)}
	s.rec = history.NewRecorder(func() time.Time { return s.now })
	return s
}

// recv records that member received the Update labelled label.
// members, assigned and revoked are space-separated lists.
func (s *script) recv(at int, member, label string, gen int64, members, assigned, revoked string) {
	s.tb.Helper()
	s.now = ms(at)
	s.seqs[member+"/"+label] = s.rec.Received(member, gen, strings.Fields(members), parts(s.tb, assigned), parts(s.tb, revoked))
}

// ack records that member acknowledged the Update labelled label.
func (s *script) ack(at int, member, label string) {
	s.tb.Helper()
	seq, ok := s.seqs[member+"/"+label]
	if !ok {
		s.tb.Fatalf("script: %s never received %s", member, label)
	}
	s.now = ms(at)
	s.rec.Acked(member, seq)
}

func (s *script) close(at int, member string) {
	s.now = ms(at)
	s.rec.Closed(member)
}

// closing records that member's allocator is being closed; its consumer
// goes on.
func (s *script) closing(at int, member string) {
	s.now = ms(at)
	s.rec.Closing(member)
}

func (s *script) fault(kind string, from, to int) { s.rec.Fault(kind, ms(from), ms(to)) }

// expect records that the expected set is now list, as in parts.
func (s *script) expect(at int, list string) {
	s.tb.Helper()
	s.now = ms(at)
	s.rec.Expect(parts(s.tb, list))
}

// recoveries summarises r.Recoveries as "kill 300ms", or "kill never".
func recoveries(r history.Report) []string {
	var out []string
	for _, rec := range r.Recoveries {
		if !rec.Converged {
			out = append(out, rec.Kind+" never")
			continue
		}
		out = append(out, fmt.Sprintf("%s %v", rec.Kind, rec.After))
	}
	return out
}

// parts parses "t:0 t:1".
func parts(tb testing.TB, list string) []rebalance.Partition {
	tb.Helper()
	var ps []rebalance.Partition
	for _, f := range strings.Fields(list) {
		p, err := rebalance.Parse(f)
		if err != nil {
			tb.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// at renders t as milliseconds after t0, or "end" for an open stretch.
func at(t time.Time, open bool) string {
	if open {
		return "end"
	}
	return fmt.Sprint(t.Sub(t0).Milliseconds())
}

// overlaps summarises r.DoubleOwnerships as "t:1 a/b 20-30 unacked".
func overlaps(r history.Report) []string {
	var out []string
	for _, o := range r.DoubleOwnerships {
		s := fmt.Sprintf("%s %s/%s %s-%s", o.Partition, o.First, o.Second, at(o.From, false), at(o.To, o.Open))
		if o.Unacked {
			s += " unacked"
		}
		out = append(out, s)
	}
	return out
}

// gaps summarises gaps as "t:1 100-1500" or "t:2 0-end".
func gaps(gs []history.Gap) []string {
	var out []string
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%s %s-%s", g.Partition, at(g.From, false), at(g.To, g.Open)))
	}
	return out
}
