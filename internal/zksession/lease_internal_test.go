package zksession

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
)

func TestLeaseAnchor(t *testing.T) {
	t.Parallel()
	const T = 2 * time.Second
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		what    string // "created" or "resumed": a connect response on a connection dialed at ms; "sync" or "commit": the answer to a sync, or to a committed check, sent at ms
		ms      int
		wantEnd int // ms; -1: the zero time
	}
	tests := []struct {
		name   string
		quorum bool
		steps  []step
	}{
		{name: "nothing yet", steps: nil},
		{name: "a connect response: from the dial", steps: []step{{"created", 0, 1600}}},
		{name: "one sync answered: not yet", steps: []step{{"created", 0, 1600}, {"sync", 100, 1600}}},
		{name: "the second answered: from the first's send", steps: []step{
			{"created", 0, 1600}, {"sync", 100, 1600}, {"sync", 700, 1700}, {"sync", 1300, 2300},
		}},
		{name: "a reconnection forgets the sync answered on the old connection", steps: []step{
			{"created", 0, 1600}, {"sync", 100, 1600}, {"sync", 700, 1700},
			{"resumed", 1000, 2600}, // the dial itself is evidence
			{"sync", 1100, 2600},    // pending again: 700 does not count now
			{"sync", 1700, 2700},
		}},
		{name: "the anchor never goes back", steps: []step{
			{"created", 500, 2100}, {"sync", 100, 2100}, {"sync", 200, 2100}, {"resumed", 300, 2100},
		}},
		{name: "a committed check renews a sync lease too", steps: []step{
			{"created", 0, 1600}, {"commit", 100, 1600}, {"commit", 700, 1700},
		}},
		// The quorum lease: only what a quorum saw.
		{name: "quorum: a new session is committed: from the dial", quorum: true, steps: []step{{"created", 0, 1600}}},
		{name: "quorum: syncs answered renew nothing", quorum: true, steps: []step{
			{"created", 0, 1600}, {"sync", 100, 1600}, {"sync", 700, 1600}, {"sync", 1300, 1600},
		}},
		{name: "quorum: the second check answered: from the first's send", quorum: true, steps: []step{
			{"created", 0, 1600}, {"commit", 100, 1600}, {"sync", 400, 1600}, {"commit", 700, 1700}, {"commit", 1300, 2300},
		}},
		{name: "quorum: a resumed session counts from the dial once a check commits", quorum: true, steps: []step{
			{"created", 0, 1600}, {"commit", 100, 1600}, {"commit", 700, 1700},
			{"resumed", 1000, 1700}, // revalidated by a leader that may be deposed
			{"sync", 1050, 1700},    // answered by it all the same
			{"commit", 1100, 2600},  // a quorum saw a request after the dial
			{"commit", 1700, 2700},
		}},
		{name: "quorum: a reconnection forgets the check answered on the old connection", quorum: true, steps: []step{
			{"created", 0, 1600}, {"commit", 100, 1600}, {"commit", 700, 1700}, {"commit", 900, 2300},
			{"resumed", 1000, 2300}, {"commit", 1100, 2600}, {"commit", 1700, 2700},
		}},
		{name: "quorum: a new session counts at once, even after a resumed one", quorum: true, steps: []step{
			{"created", 0, 1600}, {"commit", 100, 1600}, {"resumed", 500, 1600}, {"created", 800, 2400},
		}},
	}
	for _, tt := range tests {
		l := lease{quorum: tt.quorum}
		if !l.end(T).IsZero() {
			t.Errorf("%s: a new lease ends at %v, want the zero time", tt.name, l.end(T))
		}
		for i, st := range tt.steps {
			switch st.what {
			case "created", "resumed":
				if st.what == "created" {
					l.reset()
				}
				l.connected(at(st.ms), st.what == "created")
			case "sync", "commit":
				l.answered(at(st.ms), st.what == "commit")
			default:
				t.Fatalf("%s: unknown step %q", tt.name, st.what)
			}
			if got, want := l.end(T), at(st.wantEnd); !got.Equal(want) {
				t.Errorf("%s: step %d (%s %d): lease ends at %v ms, want %d ms", tt.name, i, st.what, st.ms, got.Sub(at(0)).Milliseconds(), st.wantEnd)
			}
		}
	}
}

// TestLeaseHealthyMemberKeepsIt plays a healthy member on the fake clock:
// a connection, then requests each syncEvery after the last answer, each
// taking rtt: syncs, or in the quorum lease committed checks. The lease
// never runs out, and keeps the slack the arithmetic in lease.go
// promises: (leaseFraction - 2/syncDivisor) × T - 3 rtt.
func TestLeaseHealthyMemberKeepsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		T, rtt time.Duration
		quorum bool
	}{
		{2 * time.Second, time.Millisecond, false},
		{2 * time.Second, 50 * time.Millisecond, false},
		{10 * time.Second, 200 * time.Millisecond, false},
		{2 * time.Second, time.Millisecond, true},
		{2 * time.Second, 50 * time.Millisecond, true},
		{10 * time.Second, 200 * time.Millisecond, true},
	} {
		clock := actor.NewFakeClock(time.Unix(1000, 0))
		l := lease{quorum: tc.quorum}
		l.connected(clock.Now(), true)
		clock.Advance(tc.rtt)
		minLeft := time.Duration(1<<63 - 1)
		requests := 0
		for clock.Now().Sub(time.Unix(1000, 0)) < 60*time.Second {
			sent := clock.Now()
			clock.Advance(tc.rtt)
			// Just before the answer: the oldest the anchor gets.
			minLeft = min(minLeft, l.end(tc.T).Sub(clock.Now()))
			l.answered(sent, tc.quorum)
			requests++
			clock.Advance(syncEvery(tc.T))
			minLeft = min(minLeft, l.end(tc.T).Sub(clock.Now()))
		}
		want := time.Duration((leaseFraction-2.0/syncDivisor)*float64(tc.T)) - 3*tc.rtt
		if minLeft < want {
			t.Errorf("T %v, rtt %v, quorum %v: the lease came within %v of running out, want at least %v left", tc.T, tc.rtt, tc.quorum, minLeft, want)
		}
		perSecond := float64(requests) / 60
		t.Logf("T %v, rtt %v, quorum %v: least lease left %v; %.2f requests a second", tc.T, tc.rtt, tc.quorum, minLeft, perSecond)
	}
}
