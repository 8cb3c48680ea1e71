package decision

import (
	"reflect"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// stuckCore is member "a", alone in its group over t:0..3, in session 1
// whose granted timeout is granted, with every claim wanted and the claims
// actor's answers left to the test.
func stuckCore(t *testing.T, granted time.Duration) (*core, Want) {
	h := newCore(t, "a", rebalance.RoundRobin, coreOptions{settle: time.Second, releaseTimeout: 5 * time.Second, manualClaims: true})
	h.c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1, Timeout: granted})
	h.drain()
	h.members(view(1, 1, 2, "a"))
	h.parts(parts(1, 1, 3, 0, 1, 2, 3))
	h.advance(time.Second) // settled
	return h, h.nextDesired()
}

// hold answers d with held, and blocked held by other sessions.
func (h *core) hold(d Want, held []rebalance.Partition, blocked ...Blocked) {
	h.c.ClaimsHeld(Held{SessionID: d.SessionID, Reconnects: d.Reconnects, Seq: d.Seq, Partitions: held, Blocked: blocked})
	h.drain()
}

func (h *core) takeStuck() []Stuck {
	s := h.stuck
	h.stuck = nil
	return s
}

// Wanted claims that other sessions hold for longer than a hand-off can
// take (5 × Settle + (undeliveredFactor + 1) × ReleaseTimeout + the
// granted session timeout + StuckMargin) are reported once for each
// holding session, when that is due and not before; a claim handed over
// in time is not reported, and a claim that passes to another holder is
// timed again. (Ported from the
// claims actor, where the timer was: TestClaimsReportClaimsHeldTooLong,
// TestClaimsStuckAfterTheGrantedTimeout.)
func TestCoreStuckReport(t *testing.T) {
	const granted = 4 * time.Second
	h, d := stuckCore(t, granted)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	h.hold(d, ts[3:], Blocked{Partition: ts[0], Session: 7}, Blocked{Partition: ts[1], Session: 7}, Blocked{Partition: ts[2], Session: 8})
	after := 5*time.Second + (undeliveredFactor+1)*5*time.Second + granted + StuckMargin
	if want := h.now.Add(after); !h.wake.Equal(want) {
		t.Fatalf("wake %v, want %v: stuckAfter from the held report", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(after - time.Second)
	h.hold(d, []rebalance.Partition{ts[1], ts[3]}, Blocked{Partition: ts[0], Session: 7}, Blocked{Partition: ts[2], Session: 8}) // t:1 handed over in time
	if got := h.takeStuck(); len(got) != 0 {
		t.Fatalf("reported %+v before it was due", got)
	}
	h.advance(time.Second)
	want := []Stuck{
		{Session: 7, Partitions: ts[:1], HeldFor: after},
		{Session: 8, Partitions: ts[2:3], HeldFor: after},
	}
	if got := h.takeStuck(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
	if !h.wake.IsZero() {
		t.Errorf("wake %v after reporting every holder, want none", h.wake.Sub(t0))
	}
	h.advance(time.Hour)
	h.hold(d, []rebalance.Partition{ts[1], ts[3]}, Blocked{Partition: ts[0], Session: 7}, Blocked{Partition: ts[2], Session: 8})
	h.advance(time.Hour)
	if got := h.takeStuck(); len(got) != 0 {
		t.Fatalf("reported %+v again: each holder is reported once", got)
	}

	// t:0 passes to another session: a new holder, timed from now.
	h.hold(d, []rebalance.Partition{ts[1], ts[3]}, Blocked{Partition: ts[0], Session: 9}, Blocked{Partition: ts[2], Session: 8})
	h.advance(after)
	want = []Stuck{{Session: 9, Partitions: ts[:1], HeldFor: after}}
	if got := h.takeStuck(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
}

// The holders named stand while no Held comes for a new connection (the
// claims actor's check keeps failing), and are reported once the session
// is up; not while it is down, when they could not be looked up.
func TestCoreStuckReportWhileNoHeldComes(t *testing.T) {
	const granted = 4 * time.Second
	h, d := stuckCore(t, granted)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	h.hold(d, ts[1:], Blocked{Partition: ts[0], Session: 7})
	after := 5*time.Second + (undeliveredFactor+1)*5*time.Second + granted + StuckMargin

	h.c.SessionChanged(session.State{Status: session.Suspended, SessionID: 1, Reconnects: 1, Timeout: granted})
	h.drain()
	h.advance(after)
	if got := h.takeStuck(); len(got) != 0 {
		t.Fatalf("reported %+v while the connection was lost", got)
	}
	if !h.wake.IsZero() {
		t.Errorf("wake %v while the connection is lost, want none: coming up steps the core", h.wake.Sub(t0))
	}
	h.c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 2, Timeout: granted})
	h.drain()
	want := []Stuck{{Session: 7, Partitions: ts[:1], HeldFor: after}}
	if got := h.takeStuck(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
}

// A claim no longer wanted is not reported, though the last Held still
// names its holder; and a new session forgets the old one's holders.
func TestCoreStuckReportOnlyWhileWanted(t *testing.T) {
	const granted = 4 * time.Second
	h, d := stuckCore(t, granted)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	h.hold(d, ts[2:], Blocked{Partition: ts[0], Session: 7}, Blocked{Partition: ts[1], Session: 7})
	h.parts(parts(1, 1, 4, 1, 2, 3)) // t:0 is gone
	h.advance(time.Second)           // settled: t:0 no longer wanted
	if d := h.nextDesired(); len(d.Partitions) != 3 {
		t.Fatalf("want %v, want t:0 dropped", d.Partitions)
	}
	after := 5*time.Second + (undeliveredFactor+1)*5*time.Second + granted + StuckMargin
	h.advance(after - time.Second)
	want := []Stuck{{Session: 7, Partitions: ts[1:2], HeldFor: after}}
	if got := h.takeStuck(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}

	h2, d2 := stuckCore(t, granted)
	h2.hold(d2, ts[1:], Blocked{Partition: ts[0], Session: 7})
	h2.c.SessionChanged(session.State{Status: session.Up, SessionID: 2, Reconnects: 2, Timeout: granted})
	h2.drain()
	h2.advance(after)
	if got := h2.takeStuck(); len(got) != 0 {
		t.Fatalf("reported %+v of the old session's holders", got)
	}
}

// The holders a Held names are taken at most once a holderSample: Helds
// come hundreds of times a second in a large hand-off, each naming
// thousands. One that comes sooner is taken when that has passed.
func TestCoreStuckHoldersSampled(t *testing.T) {
	const granted = 4 * time.Second
	h, d := stuckCore(t, granted)
	ts := actortest.Parts("t", 0, 1, 2, 3)
	h.hold(d, ts[1:], Blocked{Partition: ts[0], Session: 7})
	start := h.now
	h.hold(d, ts[1:], Blocked{Partition: ts[0], Session: 9}) // t:0 passed to session 9 at once
	if want := start.Add(holderSample); !h.wake.Equal(want) {
		t.Fatalf("wake %v, want %v: the second Held taken a holderSample after the first", h.wake.Sub(t0), want.Sub(t0))
	}
	h.advance(holderSample)
	after := 5*time.Second + (undeliveredFactor+1)*5*time.Second + granted + StuckMargin
	h.advance(after - holderSample)
	if got := h.takeStuck(); len(got) != 0 {
		t.Fatalf("reported %+v: session 7 no longer holds t:0, and 9 not for long enough", got)
	}
	h.advance(holderSample)
	want := []Stuck{{Session: 9, Partitions: ts[:1], HeldFor: after}}
	if got := h.takeStuck(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
}
