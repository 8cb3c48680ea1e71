package history_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		run      func(s *script)
		expected string
		live     string
		deadline time.Duration

		wantOverlaps   []string
		wantUnowned    []string
		wantDivergence string // substring; "" means converged
		wantAnomalies  int
	}{
		// (a) double ownership.
		{
			name: "both assigned at once",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.ack(1, "a", "1")
				s.recv(10, "b", "2", 2, "a b", "t:1", "")
				s.recv(20, "a", "2", 2, "a b", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps:   []string{"t:1 a/b 10-end"},
			wantDivergence: "t:1 assigned to a and b",
		},
		{
			name: "new owner receives before the old owner acks the revocation",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.ack(1, "a", "1")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.recv(20, "b", "2", 2, "a b", "t:1", "")
				s.ack(30, "a", "2")
				s.ack(31, "b", "2")
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps: []string{"t:1 a/b 20-30 unacked"},
		},
		{
			name: "ack of an older update must not release what the newer one assigns",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.recv(10, "a", "2", 2, "a", "t:0 t:1", "")
				s.ack(20, "a", "1")
				s.recv(30, "b", "3", 3, "a b", "t:1", "")
				s.recv(40, "a", "3", 3, "a b", "t:0", "t:1")
				s.ack(50, "a", "3")
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps: []string{"t:1 a/b 30-50"},
		},
		{
			name: "ack of an older update must not release what the newer one revokes",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.ack(15, "a", "1")
				s.recv(20, "b", "2", 2, "a b", "t:1", "")
				s.ack(30, "a", "2")
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps: []string{"t:1 a/b 20-30 unacked"},
		},
		{
			name: "ack of an older update after acking the newer one changes nothing",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.ack(15, "a", "2")
				s.ack(16, "a", "1")
				s.recv(20, "b", "2", 2, "a b", "t:1", "")
				s.ack(21, "b", "2")
			},
			expected: "t:0 t:1", live: "a b",
		},
		{
			name: "member closes then rejoins while the other still holds",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.ack(1, "a", "1")
				s.close(10, "a")
				s.recv(20, "b", "2", 2, "b", "t:0 t:1", "")
				s.ack(21, "b", "2")
				s.recv(30, "a", "3", 3, "a b", "t:0", "")
				s.recv(40, "b", "3", 3, "a b", "t:1", "t:0")
				s.ack(50, "b", "3")
				s.ack(55, "a", "1") // the first incarnation's: ignored
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps: []string{"t:0 b/a 30-50"},
		},
		{
			name: "member closes without acking then rejoins cleanly",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.close(10, "a")
				s.close(11, "a") // twice: nothing more
				s.recv(20, "b", "2", 2, "b", "t:0 t:1", "")
				s.ack(21, "b", "2")
				s.recv(30, "b", "3", 3, "a b", "t:1", "t:0")
				s.ack(31, "b", "3")
				s.recv(40, "a", "3", 3, "a b", "t:0", "")
				s.ack(41, "a", "3")
			},
			expected: "t:0 t:1", live: "a b",
		},
		{
			name: "same instant, ack recorded before the new owner receives",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.ack(20, "a", "2")
				s.recv(20, "b", "2", 2, "a b", "t:1", "")
			},
			expected: "t:0 t:1", live: "a b",
		},
		{
			name: "same instant, new owner receives before the ack is recorded",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.recv(20, "b", "2", 2, "a b", "t:1", "")
				s.ack(20, "a", "2")
			},
			expected: "t:0 t:1", live: "a b",
			wantOverlaps: []string{"t:1 a/b 20-20 unacked"},
		},

		// A graceful close: the closing member holds its partitions until
		// its consumer acks the final Update, which assigns nothing.
		{
			name: "hand-off before the closing member acks its final update",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a b", "t:0 t:1", "")
				s.recv(0, "b", "1", 1, "a b", "", "")
				s.ack(1, "a", "1")
				s.closing(10, "a")
				s.recv(20, "a", "final", 1, "a b", "", "t:0 t:1")
				s.recv(30, "b", "2", 2, "b", "t:0 t:1", "")
				s.ack(40, "a", "final") // a's consumer took 20 ms to stop
				s.close(50, "a")
			},
			expected: "t:0 t:1", live: "b",
			wantOverlaps: []string{"t:0 a/b 30-40 unacked", "t:1 a/b 30-40 unacked"},
		},
		{
			name: "hand-off before the closing member receives its final update",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.ack(1, "a", "1")
				s.closing(10, "a")
				s.recv(20, "b", "2", 2, "b", "t:0", "")
				s.recv(30, "a", "final", 1, "a", "", "t:0")
				s.ack(40, "a", "final")
				s.close(50, "a")
			},
			expected: "t:0", live: "b",
			wantOverlaps: []string{"t:0 a/b 20-40"},
		},
		{
			name: "closing member never acks its final update",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.ack(1, "a", "1")
				s.closing(10, "a")
				s.recv(20, "a", "final", 1, "a", "", "t:0")
				s.recv(30, "b", "2", 2, "b", "t:0", "")
				s.close(40, "a") // Updates closed after ReleaseTimeout
			},
			expected: "t:0", live: "b",
			wantOverlaps: []string{"t:0 a/b 30-40 unacked"},
		},
		{
			name: "clean graceful close and restart",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a b", "t:0", "")
				s.recv(0, "b", "1", 1, "a b", "t:1", "")
				s.ack(1, "a", "1")
				s.closing(10, "a")
				s.recv(20, "a", "final", 1, "a b", "", "t:0")
				s.ack(30, "a", "final")
				s.recv(40, "b", "2", 2, "b", "t:0 t:1", "")
				s.close(50, "a")
				s.recv(60, "a", "3", 3, "a b", "", "")
				s.recv(70, "b", "3", 3, "a b", "t:1", "t:0")
				s.ack(80, "b", "3")
				s.recv(90, "a", "4", 3, "a b", "t:0", "")
			},
			expected: "t:0 t:1", live: "a b", deadline: 100 * time.Millisecond,
		},

		// Passing hand-offs.
		{
			name: "clean hand-off",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.ack(1, "a", "1")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.ack(12, "a", "2")
				s.recv(15, "b", "2", 2, "a b", "t:1", "")
				s.ack(16, "b", "2")
			},
			expected: "t:0 t:1", live: "a b", deadline: 100 * time.Millisecond,
		},
		{
			name: "conflated updates, several received before one ack",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1 t:2", "")
				s.ack(1, "a", "1")
				s.recv(10, "a", "2", 2, "a b", "t:0 t:1", "t:2")
				s.recv(11, "a", "4", 4, "a b", "t:0", "t:1") // 3 conflated away
				s.ack(12, "a", "4")
				s.recv(13, "b", "4", 4, "a b", "t:1 t:2", "")
			},
			expected: "t:0 t:1 t:2", live: "a b", deadline: 100 * time.Millisecond,
		},

		// (b) ownership again after faults.
		{
			name: "partition unowned past the deadline after faults end",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a b", "t:0", "")
				s.recv(0, "b", "1", 1, "a b", "t:1", "")
				s.fault("kill", 100, 200)
				s.close(100, "b")
				s.recv(1500, "a", "2", 2, "a", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a", deadline: time.Second,
			wantUnowned: []string{"t:1 100-1500"},
		},
		{
			name: "partition owned again within the deadline after faults end",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a b", "t:0", "")
				s.recv(0, "b", "1", 1, "a b", "t:1", "")
				s.fault("kill", 100, 200)
				s.close(100, "b")
				s.recv(1100, "a", "2", 2, "a", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a", deadline: time.Second,
		},
		{
			name: "slow hand-off without faults",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 2, "a b", "t:0", "t:1")
				s.ack(11, "a", "2")
				s.recv(500, "b", "2", 2, "a b", "t:1", "")
			},
			expected: "t:0 t:1", live: "a b", deadline: 100 * time.Millisecond,
			wantUnowned: []string{"t:1 10-500"},
		},
		{
			name: "expected partition never owned",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.recv(10, "a", "2", 1, "a", "t:0", "")
			},
			expected: "t:0 t:2", live: "a",
			wantUnowned:    []string{"t:2 0-end"},
			wantDivergence: "t:2 assigned to no live member",
		},

		// (c) convergence.
		{
			name: "members end on different generations",
			run: func(s *script) {
				s.recv(0, "a", "2", 2, "a b", "t:0", "")
				s.recv(0, "b", "3", 3, "a b", "t:1", "")
			},
			expected: "t:0 t:1", live: "a b",
			wantDivergence: "generations differ: 2 [a], 3 [b]",
		},
		{
			name: "members end with different member lists",
			run: func(s *script) {
				s.recv(0, "a", "2", 2, "a b", "t:0", "")
				s.recv(0, "b", "2", 2, "a b c", "t:1", "")
			},
			expected: "t:0 t:1", live: "a b",
			wantDivergence: "member lists differ: [a b c] [b], [a b] [a]",
		},
		{
			name: "member list is not the live members",
			run: func(s *script) {
				s.recv(0, "a", "2", 2, "a b c", "t:0", "")
				s.recv(0, "b", "2", 2, "a b c", "t:1", "")
			},
			expected: "t:0 t:1", live: "a b",
			wantDivergence: "Updates list members [a b c], live are [a b]",
		},
		{
			name: "partition assigned to nobody at the end",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a b", "t:0", "")
				s.recv(0, "b", "1", 1, "a b", "t:1", "")
				s.recv(10, "b", "2", 2, "a b", "", "t:1")
				s.recv(10, "a", "2", 2, "a b", "t:0", "")
			},
			expected: "t:0 t:1", live: "a b",
			wantUnowned:    []string{"t:1 10-end"},
			wantDivergence: "t:1 assigned to no live member",
		},
		{
			name: "unexpected partition assigned at the end",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:9", "")
			},
			expected: "t:0", live: "a",
			wantDivergence: "t:9 assigned to a but not expected",
		},
		{
			name: "live member without an update",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.recv(0, "c", "1", 1, "c", "", "")
				s.close(5, "c")
			},
			expected: "t:0", live: "a c",
			wantDivergence: "live member c has no Update since it last started",
		},
		{
			name: "revoked is not what assigned lost",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.recv(10, "a", "2", 1, "a", "t:0", "")
				s.recv(20, "a", "3", 1, "a", "t:0 t:1", "t:2")
			},
			expected: "t:0 t:1", live: "a",
			wantAnomalies: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newScript(t)
			tt.run(s)
			r := history.Check(s.rec.History(), history.Options{
				Expected: parts(t, tt.expected),
				Deadline: tt.deadline,
				Live:     strings.Fields(tt.live),
			})
			if got := overlaps(r); !slices.Equal(got, tt.wantOverlaps) {
				t.Errorf("DoubleOwnerships = %q, want %q", got, tt.wantOverlaps)
			}
			if got := gaps(r.Unowned); !slices.Equal(got, tt.wantUnowned) {
				t.Errorf("Unowned = %q, want %q", got, tt.wantUnowned)
			}
			if tt.wantDivergence == "" {
				if !r.Converged || r.Divergence != "" {
					t.Errorf("Converged = %v, Divergence = %q, want converged", r.Converged, r.Divergence)
				}
			} else if r.Converged || !strings.Contains(r.Divergence, tt.wantDivergence) {
				t.Errorf("Converged = %v, Divergence = %q, want it to contain %q", r.Converged, r.Divergence, tt.wantDivergence)
			}
			if got := len(r.Anomalies); got != tt.wantAnomalies {
				t.Errorf("Anomalies = %q, want %d", r.Anomalies, tt.wantAnomalies)
			}
			fail := len(tt.wantOverlaps)+len(tt.wantUnowned)+tt.wantAnomalies > 0 || tt.wantDivergence != ""
			switch err := r.Err(); {
			case fail && !errors.Is(err, history.ErrFailed):
				t.Errorf("Err() = %v, want an error wrapping ErrFailed", err)
			case !fail && err != nil:
				t.Errorf("Err() = %v, want nil", err)
			}
		})
	}
}
