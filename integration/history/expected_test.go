package history_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
)

// TestCheckExpectedSetChanges changes the expected set during the history
// with Recorder.Expect.
func TestCheckExpectedSetChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		run      func(s *script)
		expected string // Options.Expected, the final set
		live     string
		deadline time.Duration

		wantUnowned    []string
		wantLongest    []string // LongestGaps
		wantRecoveries []string
		wantDivergence string // substring; "" means converged
		wantAnomalies  int
	}{
		{
			name: "recoveries are measured against the set in force",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.fault("kill", 100, 200)
				s.recv(150, "a", "2", 2, "a", "t:0", "t:1")
				s.ack(151, "a", "2")
				s.recv(500, "a", "3", 3, "a", "t:0 t:1", "") // converged for {t:0 t:1}
				s.fault("change-partitions", 1000, 1100)
				s.expect(1050, "t:0 t:1 t:2")
				s.recv(1300, "a", "4", 4, "a", "t:0 t:1 t:2", "")
			},
			expected: "t:0 t:1 t:2", live: "a", deadline: time.Second,
			// Against the final set, the kill would recover only at 1300.
			wantRecoveries: []string{"kill 300ms", "change-partitions 200ms"},
			wantLongest:    []string{"t:1 150-500"}, // t:2's wait for a first owner is no gap
		},
		{
			name: "a change recorded after the members already own the new set",
			run: func(s *script) {
				s.expect(0, "t:0")
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.fault("change-partitions", 100, 300)
				s.recv(200, "a", "2", 2, "a", "t:0 t:1", "")
				s.expect(250, "t:0 t:1")
			},
			expected: "t:0 t:1", live: "a", deadline: 10 * time.Millisecond,
			wantRecoveries: []string{"change-partitions 0s"},
		},
		{
			name: "a removed partition released a while later is no gap",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.fault("change-partitions", 100, 150)
				s.expect(120, "t:0")
				s.recv(300, "a", "2", 2, "a", "t:0", "t:1")
				s.ack(310, "a", "2")
				s.recv(2000, "a", "3", 3, "a", "t:0", "")
			},
			expected: "t:0", live: "a", deadline: 100 * time.Millisecond,
			wantRecoveries: []string{"change-partitions 150ms"},
		},
		{
			name: "a removed partition still assigned at the end",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.fault("change-partitions", 100, 150)
				s.expect(120, "t:0")
			},
			expected: "t:0", live: "a",
			wantRecoveries: []string{"change-partitions never"},
			wantDivergence: "t:1 assigned to a but not expected",
		},
		{
			name: "a gap cut short by the partition's removal",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a b", "t:0", "")
				s.recv(0, "b", "1", 1, "a b", "t:1", "")
				s.close(100, "b")
				s.expect(400, "t:0")
				s.recv(500, "a", "2", 2, "a", "t:0", "")
			},
			expected: "t:0", live: "a", deadline: time.Second,
			wantLongest: []string{"t:1 100-400"},
		},
		{
			name: "an added partition never owned",
			run: func(s *script) {
				s.expect(0, "t:0")
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.fault("change-partitions", 100, 200)
				s.expect(150, "t:0 t:1")
				s.recv(300, "a", "2", 2, "a", "t:0", "")
			},
			expected: "t:0 t:1", live: "a",
			wantUnowned:    []string{"t:1 150-end"},
			wantLongest:    []string{"t:1 150-end"},
			wantRecoveries: []string{"change-partitions never"},
			wantDivergence: "t:1 assigned to no live member",
		},
		{
			name: "an added partition owned past the deadline",
			run: func(s *script) {
				s.expect(0, "t:0")
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.fault("change-partitions", 100, 200)
				s.expect(150, "t:0 t:1")
				s.recv(1500, "a", "2", 2, "a", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a", deadline: time.Second,
			wantUnowned:    []string{"t:1 150-1500"},
			wantLongest:    []string{"t:1 150-1500"},
			wantRecoveries: []string{"change-partitions 1.3s"},
		},
		{
			name: "a re-added partition waits from when it was added again",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.expect(100, "t:0")
				s.recv(150, "a", "2", 2, "a", "t:0", "t:1")
				s.ack(151, "a", "2")
				s.expect(1000, "t:0 t:1")
				s.recv(1200, "a", "3", 3, "a", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a", deadline: 500 * time.Millisecond,
		},
		{
			name: "the first expected set holds from the start",
			run: func(s *script) {
				s.recv(0, "a", "1", 1, "a", "t:0", "")
				s.fault("kill", 10, 20)
				s.expect(50, "t:0")
				s.fault("change-partitions", 60, 70)
				s.expect(65, "t:0 t:1")
				s.recv(100, "a", "2", 2, "a", "t:0 t:1", "")
			},
			expected: "t:0 t:1", live: "a",
			// Not 30ms: the final set is not what was expected before 50.
			wantRecoveries: []string{"kill 0s", "change-partitions 30ms"},
		},
		{
			name: "the last expected set is not Options.Expected",
			run: func(s *script) {
				s.expect(0, "t:0 t:1")
				s.recv(0, "a", "1", 1, "a", "t:0 t:1", "")
				s.expect(100, "t:0")
				s.recv(200, "a", "2", 2, "a", "t:0", "t:1")
			},
			expected: "t:0 t:1", live: "a",
			wantUnowned:    []string{"t:1 200-end"},
			wantLongest:    []string{"t:1 200-end"},
			wantDivergence: "t:1 assigned to no live member",
			wantAnomalies:  1,
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
			if got := overlaps(r); len(got) > 0 {
				t.Errorf("DoubleOwnerships = %q, want none", got)
			}
			if got := gaps(r.Unowned); !slices.Equal(got, tt.wantUnowned) {
				t.Errorf("Unowned = %q, want %q", got, tt.wantUnowned)
			}
			if got := gaps(r.LongestGaps); !slices.Equal(got, tt.wantLongest) {
				t.Errorf("LongestGaps = %q, want %q", got, tt.wantLongest)
			}
			if got := recoveries(r); !slices.Equal(got, tt.wantRecoveries) {
				t.Errorf("Recoveries = %q, want %q", got, tt.wantRecoveries)
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
			fail := len(tt.wantUnowned)+tt.wantAnomalies > 0 || tt.wantDivergence != ""
			switch err := r.Err(); {
			case fail && !errors.Is(err, history.ErrFailed):
				t.Errorf("Err() = %v, want an error wrapping ErrFailed", err)
			case !fail && err != nil:
				t.Errorf("Err() = %v, want nil", err)
			}
		})
	}
}
