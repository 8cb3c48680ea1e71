package claims

import (
	"reflect"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The timing of stuck claims, synchronously: the actor's clock is a
// variable the test moves. (Ported from the member core's
// TestCoreStuckReport*, where the timing was before issue 25.)

var stuckT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The bound is the longest a hand-off can take, 5 × Settle +
// 3 × ReleaseTimeout + the granted session timeout, plus 10 s; stated here
// in numbers, so that a change of it fails.
const stuckSettle, stuckRelease, stuckGranted = time.Second, 5 * time.Second, 4 * time.Second

var stuckBound = 5*time.Second + 3*5*time.Second + 4*time.Second + 10*time.Second

func wantedAll(rebalance.Partition) bool { return true }

// stuckWaits returns waits of a session that is up, with stuckBound.
func stuckWaits(t *testing.T) *waits {
	t.Helper()
	if after := stuckAfter(stuckSettle, stuckRelease, stuckGranted); after != stuckBound {
		t.Fatalf("stuckAfter(%v, %v, %v) = %v, want %v", stuckSettle, stuckRelease, stuckGranted, after, stuckBound)
	}
	w := newWaits()
	w.setSession(true, stuckAfter(stuckSettle, stuckRelease, stuckGranted))
	return &w
}

// Wanted claims that other sessions hold for longer than a hand-off can
// take are warned of once for each holding session, when that is due and
// not before; a claim handed over in time is not warned of, and a claim
// that passes to another holder is timed again.
func TestStuckWarning(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	now := stuckT0
	w.held(ts[0], 7, now)
	w.held(ts[1], 7, now)
	w.held(ts[2], 8, now)
	if want := now.Add(stuckBound); !w.wake().Equal(want) {
		t.Fatalf("wake %v, want %v: the bound from when the holders were found", w.wake().Sub(stuckT0), want.Sub(stuckT0))
	}
	now = now.Add(stuckBound - time.Second)
	w.gone(ts[1]) // t:1 handed over in time
	w.held(ts[0], 7, now)
	w.held(ts[2], 8, now) // found held again by the same sessions: timed from the first time
	if got := w.due(now, wantedAll); len(got) != 0 {
		t.Fatalf("warned of %+v before it was due", got)
	}
	now = now.Add(time.Second)
	want := []stuck{
		{session: 7, partitions: ts[:1], heldFor: stuckBound},
		{session: 8, partitions: ts[2:3], heldFor: stuckBound},
	}
	if got := w.due(now, wantedAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
	if !w.wake().IsZero() {
		t.Errorf("wake %v after warning of every holder, want none", w.wake().Sub(stuckT0))
	}
	now = now.Add(time.Hour)
	w.held(ts[0], 7, now)
	w.held(ts[2], 8, now)
	now = now.Add(time.Hour)
	if got := w.due(now, wantedAll); len(got) != 0 {
		t.Fatalf("warned of %+v again: each holder is warned of once", got)
	}

	// t:0 passes to another session: a new holder, timed from now.
	w.held(ts[0], 9, now)
	now = now.Add(stuckBound)
	want = []stuck{{session: 9, partitions: ts[:1], heldFor: stuckBound}}
	if got := w.due(now, wantedAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
}

// One warning names every claim its holder has held past the bound,
// sorted, with the longest any was held.
func TestStuckWarningPerHolder(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0, 1, 2)
	now := stuckT0
	w.held(ts[2], 7, now)
	now = now.Add(time.Second)
	w.held(ts[0], 7, now)
	w.held(ts[1], 7, now.Add(time.Minute)) // not yet due when the others are
	now = now.Add(stuckBound)
	want := []stuck{{session: 7, partitions: []rebalance.Partition{ts[0], ts[2]}, heldFor: stuckBound + time.Second}}
	if got := w.due(now, wantedAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
	if want := now.Add(time.Minute); !w.wake().Equal(want) {
		t.Errorf("wake %v, want %v: t:1's bound", w.wake().Sub(stuckT0), want.Sub(stuckT0))
	}
}

// The holders found stand while the connection is lost (the claims
// cannot be looked at again), and are warned of once the session is up;
// not while it is down, when they could not be looked up.
func TestStuckWarningWhileDown(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0)
	now := stuckT0
	w.held(ts[0], 7, now)
	w.setSession(false, stuckBound)
	now = now.Add(stuckBound)
	if got := w.due(now, wantedAll); len(got) != 0 {
		t.Fatalf("warned of %+v while the connection was lost", got)
	}
	if !w.wake().IsZero() {
		t.Errorf("wake %v while the connection is lost, want none: coming up asks again", w.wake().Sub(stuckT0))
	}
	w.setSession(true, stuckBound)
	if at := w.wake(); at.After(now) {
		t.Errorf("wake %v once up, want at once (%v)", at.Sub(stuckT0), now.Sub(stuckT0))
	}
	want := []stuck{{session: 7, partitions: ts, heldFor: stuckBound}}
	if got := w.due(now, wantedAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
}

// The bound counts the session timeout the server granted, taken with
// every session state: the one asked for may be far longer, and a member
// that disagrees would go unwarned of for that long.
func TestStuckWarningFollowsTheGrantedTimeout(t *testing.T) {
	t.Parallel()
	w := newWaits()
	w.setSession(true, stuckAfter(stuckSettle, stuckRelease, 20*time.Second))
	ts := actortest.Parts("t", 0)
	w.held(ts[0], 7, stuckT0)
	if want := stuckT0.Add(stuckBound + 16*time.Second); !w.wake().Equal(want) {
		t.Fatalf("wake %v, want %v", w.wake().Sub(stuckT0), want.Sub(stuckT0))
	}
	w.setSession(true, stuckAfter(stuckSettle, stuckRelease, stuckGranted))
	if want := stuckT0.Add(stuckBound); !w.wake().Equal(want) {
		t.Fatalf("wake %v after the granted timeout changed, want %v", w.wake().Sub(stuckT0), want.Sub(stuckT0))
	}
}

// A claim no longer wanted is not warned of, though its holder was
// found; and a new session forgets the old one's holders.
func TestStuckWarningOnlyWhileWanted(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0, 1)
	w.held(ts[0], 7, stuckT0)
	w.held(ts[1], 7, stuckT0)
	notT0 := func(p rebalance.Partition) bool { return p != ts[0] } // t:0 is gone from the Want
	now := stuckT0.Add(stuckBound)
	want := []stuck{{session: 7, partitions: ts[1:2], heldFor: stuckBound}}
	if got := w.due(now, notT0); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
	if _, ok := w.m[ts[0]]; ok {
		t.Errorf("t:0, no longer wanted, still timed")
	}

	w2 := stuckWaits(t)
	w2.held(ts[0], 7, stuckT0)
	w2.keep(notT0)
	w2.held(ts[1], 7, stuckT0)
	w2.clear() // a new session of this member
	if got := w2.due(now, wantedAll); len(got) != 0 {
		t.Fatalf("warned of %+v of the old session's holders", got)
	}
	if !w2.wake().IsZero() {
		t.Errorf("wake %v with nothing timed, want none", w2.wake().Sub(stuckT0))
	}
}

// A claim that passes to another session at once is timed from then:
// the first holder no longer holds it, and the second not for long
// enough. (Ported from TestCoreStuckHoldersSampled; the core took the
// holders a Held named at most once a second, but the actor notes each
// holder as it finds it, so nothing is sampled any more.)
func TestStuckWarningHolderChanges(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0)
	w.held(ts[0], 7, stuckT0)
	now := stuckT0.Add(time.Second)
	w.held(ts[0], 9, now) // t:0 passed to session 9
	if want := now.Add(stuckBound); !w.wake().Equal(want) {
		t.Fatalf("wake %v, want %v: session 9's hold timed from when it was found", w.wake().Sub(stuckT0), want.Sub(stuckT0))
	}
	if got := w.due(stuckT0.Add(stuckBound), wantedAll); len(got) != 0 {
		t.Fatalf("warned of %+v: session 7 no longer holds t:0, and 9 not for long enough", got)
	}
	want := []stuck{{session: 9, partitions: ts, heldFor: stuckBound}}
	if got := w.due(now.Add(stuckBound), wantedAll); !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %+v, want %+v", got, want)
	}
}

// A warning names the first few partitions and how many more.
func TestStuckNamed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		want string
	}{
		{1, "t:0"},
		{3, "t:0,t:1,t:2"},
		{maxNamed, "t:0,t:1,t:2,t:3,t:4,t:5,t:6,t:7,t:8,t:9"},
		{maxNamed + 2, "t:0,t:1,t:2,t:3,t:4,t:5,t:6,t:7,t:8,t:9 and 2 more"},
	} {
		if got := named(actortest.PartsN("t", tt.n)); got != tt.want {
			t.Errorf("named(%d partitions) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// The wake-up follows every change of what is timed: wake is asked after
// every event of the actor, and answers from a cache while nothing
// changed.
func TestStuckWakeFollowsChanges(t *testing.T) {
	t.Parallel()
	w := stuckWaits(t)
	ts := actortest.Parts("t", 0, 1, 2)
	w.held(ts[0], 7, stuckT0)
	w.held(ts[1], 8, stuckT0.Add(time.Minute))
	for _, step := range []struct {
		what   string
		change func()
		want   time.Time // zero: none
	}{
		{"two holders", func() {}, stuckT0.Add(stuckBound)},
		{"asked again", func() {}, stuckT0.Add(stuckBound)},
		{"the oldest handed over", func() { w.gone(ts[0]) }, stuckT0.Add(time.Minute + stuckBound)},
		{"a newer holder", func() { w.held(ts[2], 9, stuckT0.Add(2*time.Minute)) }, stuckT0.Add(time.Minute + stuckBound)},
		{"the session down", func() { w.setSession(false, stuckBound) }, time.Time{}},
		{"the session up", func() { w.setSession(true, stuckBound) }, stuckT0.Add(time.Minute + stuckBound)},
		{"a longer bound", func() { w.setSession(true, stuckBound+time.Second) }, stuckT0.Add(time.Minute + stuckBound + time.Second)},
		{"t:1 no longer wanted", func() { w.keep(func(p rebalance.Partition) bool { return p != ts[1] }) }, stuckT0.Add(2*time.Minute + stuckBound + time.Second)},
		{"t:2 warned of", func() { w.due(stuckT0.Add(time.Hour), wantedAll) }, time.Time{}},
		{"a holder in a new session", func() { w.clear(); w.held(ts[0], 7, stuckT0.Add(time.Hour)) }, stuckT0.Add(time.Hour + stuckBound + time.Second)},
	} {
		step.change()
		if got := w.wake(); !got.Equal(step.want) {
			t.Errorf("%s: wake %v, want %v", step.what, got.Sub(stuckT0), step.want.Sub(stuckT0))
		}
	}
}
