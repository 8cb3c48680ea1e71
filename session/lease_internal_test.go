package session

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
		connected bool // a connect response on a connection dialed at ms; otherwise a sync sent at ms answered
		ms        int
		wantEnd   int // ms; -1: the zero time
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "nothing yet", steps: nil},
		{name: "a connect response: from the dial", steps: []step{{connected: true, ms: 0, wantEnd: 1600}}},
		{name: "one sync answered: not yet", steps: []step{{connected: true, ms: 0, wantEnd: 1600}, {ms: 100, wantEnd: 1600}}},
		{name: "the second answered: from the first's send", steps: []step{
			{connected: true, ms: 0, wantEnd: 1600}, {ms: 100, wantEnd: 1600}, {ms: 700, wantEnd: 1700}, {ms: 1300, wantEnd: 2300},
		}},
		{name: "a reconnection forgets the sync answered on the old connection", steps: []step{
			{connected: true, ms: 0, wantEnd: 1600}, {ms: 100, wantEnd: 1600}, {ms: 700, wantEnd: 1700},
			{connected: true, ms: 1000, wantEnd: 2600}, // the dial itself is evidence
			{ms: 1100, wantEnd: 2600},                  // pending again: 700 does not count now
			{ms: 1700, wantEnd: 2700},
		}},
		{name: "the anchor never goes back", steps: []step{
			{connected: true, ms: 500, wantEnd: 2100}, {ms: 100, wantEnd: 2100}, {ms: 200, wantEnd: 2100}, {connected: true, ms: 300, wantEnd: 2100},
		}},
	}
	for _, tt := range tests {
		var l lease
		if !l.end(T).IsZero() {
			t.Errorf("%s: a new lease ends at %v, want the zero time", tt.name, l.end(T))
		}
		for i, st := range tt.steps {
			if st.connected {
				l.connected(at(st.ms))
			} else {
				l.synced(at(st.ms))
			}
			if got, want := l.end(T), at(st.wantEnd); !got.Equal(want) {
				t.Errorf("%s: step %d: lease ends at %v ms, want %d ms", tt.name, i, got.Sub(at(0)).Milliseconds(), st.wantEnd)
			}
		}
	}
}

// TestLeaseHealthyMemberKeepsIt plays a healthy member on the fake clock:
// a connection, then syncs each syncEvery after the last answer, each
// taking rtt. The lease never runs out, and keeps the slack the arithmetic
// in lease.go promises: (leaseFraction - 2/syncDivisor) × T - 3 rtt.
func TestLeaseHealthyMemberKeepsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		T, rtt time.Duration
	}{
		{2 * time.Second, time.Millisecond},
		{2 * time.Second, 50 * time.Millisecond},
		{10 * time.Second, 200 * time.Millisecond},
	} {
		clock := actor.NewFakeClock(time.Unix(1000, 0))
		var l lease
		l.connected(clock.Now())
		clock.Advance(tc.rtt)
		minLeft := time.Duration(1<<63 - 1)
		syncs := 0
		for clock.Now().Sub(time.Unix(1000, 0)) < 60*time.Second {
			sent := clock.Now()
			clock.Advance(tc.rtt)
			// Just before the answer: the oldest the anchor gets.
			minLeft = min(minLeft, l.end(tc.T).Sub(clock.Now()))
			l.synced(sent)
			syncs++
			clock.Advance(syncEvery(tc.T))
			minLeft = min(minLeft, l.end(tc.T).Sub(clock.Now()))
		}
		want := time.Duration((leaseFraction-2.0/syncDivisor)*float64(tc.T)) - 3*tc.rtt
		if minLeft < want {
			t.Errorf("T %v, rtt %v: the lease came within %v of running out, want at least %v left", tc.T, tc.rtt, minLeft, want)
		}
		perSecond := float64(syncs) / 60
		t.Logf("T %v, rtt %v: least lease left %v; %.2f syncs a second", tc.T, tc.rtt, minLeft, perSecond)
	}
}
