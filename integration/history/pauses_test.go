package history_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
)

// recvTok records, with Record, that member received an Update assigning
// assigned with the tokens toks (space-separated, in order).
func (s *script) recvTok(at int, member, label string, assigned, revoked string, toks ...int64) {
	s.tb.Helper()
	s.seqs[member+"/"+label] = s.rec.Record(history.Event{
		Time: ms(at), Kind: history.KindReceived, Member: member, Generation: 1,
		Members: []string{"m", "n"}, Assigned: parts(s.tb, assigned), Revoked: parts(s.tb, revoked), Tokens: toks,
	})
}

func (s *script) ackAt(at int, member, label string) {
	s.tb.Helper()
	s.rec.Record(history.Event{Time: ms(at), Kind: history.KindAcked, Member: member, Seq: s.seqs[member+"/"+label]})
}

func TestCheckPauses(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	tests := []struct {
		name        string
		pause       history.Pause
		run         func(s *script)
		wantOverlap []string // as overlaps() renders them
		wantExcused []string
		wantLate    bool
	}{
		{
			name:  "stopped past its session: the successor's overlap is excused",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(2500, "n", "1", "t:0", "", 20) // m's session expired
				s.recvTok(3050, "m", "2", "", "t:0")     // resumed: Lost
				s.ackAt(3400, "m", "2")
			},
			wantExcused: []string{"t:0 m/n 2500-3400"},
		},
		{
			name:  "a stale Update taken after the resume is excused too",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(2000, "n", "1", "t:1", "", 20)
				s.recvTok(3010, "m", "2", "t:0 t:1", "", 10, 11) // computed before the stop
				s.recvTok(3020, "m", "3", "", "t:0 t:1")
				s.ackAt(3100, "m", "3")
			},
			wantExcused: []string{"t:1 n/m 3010-3100"},
		},
		{
			name:  "the session lived: no excuse",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(1700), PastLease: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(1710, "m", "2", "", "t:0") // resumed: Lost; closed at once
				s.recvTok(1720, "n", "1", "t:0", "", 20)
				s.ackAt(2000, "m", "2")
			},
			wantOverlap: []string{"t:0 m/n 1720-2000 unacked"},
		},
		{
			name:  "a successor with a lower token: no excuse",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(2500, "n", "1", "t:0", "", 9)
				s.recvTok(3050, "m", "2", "", "t:0")
				s.ackAt(3100, "m", "2")
			},
			wantOverlap: []string{"t:0 m/n 2500-3100"},
		},
		{
			name:  "tokens not recorded: no excuse",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "")
				s.ackAt(1, "m", "1")
				s.recvTok(2500, "n", "1", "t:0", "", 20)
				s.recvTok(3050, "m", "2", "", "t:0")
				s.ackAt(3100, "m", "2")
			},
			wantOverlap: []string{"t:0 m/n 2500-3100"},
		},
		{
			name:  "revoked too late: neither excused nor in time",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(2500, "n", "1", "t:0", "", 20)
				s.recvTok(4500, "m", "2", "", "t:0")
				s.ackAt(4600, "m", "2")
			},
			wantOverlap: []string{"t:0 m/n 2500-4600"},
			wantLate:    true,
		},
		{
			name:  "a successor after the resume: no excuse",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true, Expired: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "t:0", "", 10)
				s.ackAt(1, "m", "1")
				s.recvTok(3005, "m", "2", "", "t:0")
				s.recvTok(4100, "n", "1", "t:0", "", 20) // past the bound
				s.ackAt(4200, "m", "2")
			},
			wantOverlap: []string{"t:0 m/n 4100-4200 unacked"},
		},
		{
			name:  "holding nothing, nothing to revoke",
			pause: history.Pause{Member: "m", From: ms(100), To: ms(3000), PastLease: true},
			run: func(s *script) {
				s.recvTok(0, "m", "1", "", "")
				s.recvTok(0, "n", "1", "t:0", "", 20)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript(t)
			tt.run(s)
			s.rec.Paused(tt.pause)
			r := history.Check(s.rec.History(), history.Options{ResumeBound: bound})
			if got := overlaps(r); !slices.Equal(got, tt.wantOverlap) {
				t.Errorf("double ownerships %q, want %q", got, tt.wantOverlap)
			}
			var excused []string
			for _, o := range r.Excused {
				excused = append(excused, strings.Join(overlaps(history.Report{DoubleOwnerships: []history.Overlap{o}}), ""))
				if !strings.Contains(o.String(), "excused: m was stopped past its session's end") {
					t.Errorf("excused overlap %s does not say why", o)
				}
			}
			if !slices.Equal(excused, tt.wantExcused) {
				t.Errorf("excused %q, want %q", excused, tt.wantExcused)
			}
			if len(r.Resumes) != 1 || r.Resumes[0].Late != tt.wantLate {
				t.Errorf("Resumes = %+v, want one, late %v", r.Resumes, tt.wantLate)
			}
			err := r.Err()
			if fail := len(tt.wantOverlap) > 0 || tt.wantLate; (err != nil) != fail {
				t.Errorf("Err() = %v, want an error: %v", err, fail)
			}
			if tt.wantLate && !strings.Contains(err.Error(), "(e) members resumed past their lease that did not revoke everything within 1s:") {
				t.Errorf("Err() = %v, want (e) listed", err)
			}
		})
	}
}

// Record keeps the caller's time and numbers received Updates after the
// Recorder's own.
func TestRecorderRecord(t *testing.T) {
	t.Parallel()
	s := newScript(t)
	s.now = ms(50)
	first := s.rec.Received("a", 1, []string{"a"}, parts(t, "t:0"), nil)
	tokens := []int64{7}
	seq := s.rec.Record(history.Event{Time: ms(10), Kind: history.KindReceived, Member: "b", Seq: 99, Assigned: parts(t, "t:1"), Tokens: tokens})
	tokens[0] = 8 // copied
	if seq != first+1 {
		t.Errorf("Record returned seq %d, want %d", seq, first+1)
	}
	if got := s.rec.Record(history.Event{Kind: history.KindAcked, Member: "b", Seq: seq}); got != seq {
		t.Errorf("Record of an Ack returned %d, want %d", got, seq)
	}
	h := s.rec.History()
	if len(h.Events) != 3 || h.Events[0].Member != "b" || h.Events[0].Time != ms(10) || h.Events[0].Tokens[0] != 7 {
		t.Fatalf("events %+v, want b's at 10ms first, with token 7", h.Events)
	}
	if h.Events[2].Time != ms(50) {
		t.Errorf("an event recorded with no time stamped %v, want the clock's %v", h.Events[2].Time, ms(50))
	}
}
