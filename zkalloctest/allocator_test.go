package zkalloctest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/zkalloctest"
)

// These tests check what a Member has because it is a real Allocator:
// DepartureDelay, the stop on a fatal error, the members actor's refusal
// of a name in use, and Stats.

// drain returns the Updates c has seen and not yet returned.
func (c *consumer) drain() []zkalloc.Update {
	var out []zkalloc.Update
	for {
		select {
		case u := <-c.seen:
			out = append(out, u)
		default:
			return out
		}
	}
}

// until waits for the next Update c sees that ok accepts, and returns it,
// failing the test if ctx ends first. Updates it skips are appended to
// *skipped, if not nil.
func (c *consumer) until(ctx context.Context, what string, ok func(zkalloc.Update) bool, skipped *[]zkalloc.Update) zkalloc.Update {
	c.t.Helper()
	for {
		select {
		case u := <-c.seen:
			if ok(u) {
				return u
			}
			if skipped != nil {
				*skipped = append(*skipped, u)
			}
		case <-ctx.Done():
			c.t.Fatalf("%s: no Update with %s", c.name, what)
		}
	}
}

// eventually waits until cond holds, failing the test, with what, if
// ctx ends first. For what has no change to wait on, such as Stats.
func eventually(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("not %s", what)
		}
	}
}

func TestDepartureDelay(t *testing.T) {
	// A member that leaves and comes back within the delay: its
	// partitions wait for it, unowned, and nobody else's move.
	t.Run("back within the delay moves nothing", func(t *testing.T) {
		g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 8), DepartureDelay: time.Hour})
		shared := newRunningOn(t, true)
		a, ca := joinConsume(t, g, "a", shared)
		b, _ := joinConsume(t, g, "b", shared)
		converge(t, ctx, g)
		mineA, mineB := a.Current().Assigned, b.Current().Assigned
		if len(mineA) != 4 || len(mineB) != 4 {
			t.Fatalf("a has %v and b %v, want 4 each", mineA, mineB)
		}
		ca.drain()

		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		var seen []zkalloc.Update
		away := ca.until(ctx, "b gone from Members", func(u zkalloc.Update) bool { return slices.Equal(u.Members, []string{"a"}) }, &seen)
		seen = append(seen, away)
		if !slices.Equal(away.Assigned, mineA) {
			t.Errorf("a while b is away: Assigned %v, want %v unchanged", away.Assigned, mineA)
		}
		owners := g.Owners()
		for _, p := range mineB {
			if o, ok := owners[p]; ok {
				t.Errorf("%v owned by %s while b is away, want nobody", p, o)
			}
		}

		b2, _ := joinConsume(t, g, "b", shared)
		converge(t, ctx, g)
		if got := b2.Current().Assigned; !slices.Equal(got, mineB) {
			t.Errorf("b back: Assigned %v, want its own %v back", got, mineB)
		}
		if got := a.Current().Assigned; !slices.Equal(got, mineA) {
			t.Errorf("a after b came back: Assigned %v, want %v", got, mineA)
		}
		for _, u := range append(seen, ca.drain()...) {
			if len(u.Added) > 0 || len(u.Revoked) > 0 {
				t.Errorf("a's consumer got Added %v, Revoked %v while b was away and back", u.Added, u.Revoked)
			}
		}
	})

	// A member that stays away: once the delay has run out, the others
	// take its partitions over, and not before.
	t.Run("after the delay the others take over", func(t *testing.T) {
		const delay = 300 * time.Millisecond
		g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 8), DepartureDelay: delay})
		shared := newRunningOn(t, false)
		a, ca := joinConsume(t, g, "a", shared)
		b, _ := joinConsume(t, g, "b", shared)
		converge(t, ctx, g)
		began := time.Now()
		b.Crash()
		converge(t, ctx, g)
		if took := time.Since(began); took < delay {
			t.Errorf("the group converged without b %v after it left, before DepartureDelay %v", took, delay)
		}
		if got := a.Current().Assigned; len(got) != 8 {
			t.Errorf("a after the delay: Assigned %v, want all 8", got)
		}
		checkRuns(t, 8, ca)
		if got := g.Members(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("members: %v", got)
		}
		// b's seat is gone: b comes back as a newcomer, and the
		// strategy, not the seat, says what it gets.
		b2, _ := joinConsume(t, g, "b", shared)
		converge(t, ctx, g)
		if n := len(b2.Current().Assigned); n != 4 {
			t.Errorf("b joined again has %d partitions, want 4", n)
		}
	})
}

// A fatal error stops the member as in production: its consumer gets a
// final Update revoking everything, the claims stay until it acks,
// Updates closes, Close returns the error, and the others take over.
func TestFatalErrorStopsTheMember(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 6)})
	shared := newRunningOn(t, true)
	a, ca := joinConsume(t, g, "a", shared)
	b, cb := joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	mine := a.Current().Assigned

	ca.hold.Store(true)
	errFatal := errors.New("injected fatal error")
	a.Fail(errFatal)
	final := ca.nextHeld(ctx)
	if len(final.Assigned) != 0 || !slices.Equal(final.Revoked, mine) {
		t.Fatalf("a's final Update: Assigned %v, Revoked %v; want none and %v", final.Assigned, final.Revoked, mine)
	}
	owners := g.Owners()
	for _, p := range mine {
		if owners[p] != "a" {
			t.Errorf("%v owned by %q before a's consumer acked, want a", p, owners[p])
		}
	}
	ca.ack <- struct{}{}
	ca.wait(ctx) // Updates closed
	if err := a.Close(); !errors.Is(err, errFatal) {
		t.Errorf("Close after the fatal error: %v, want it to wrap %v", err, errFatal)
	}
	if err := a.Close(); !errors.Is(err, errFatal) {
		t.Errorf("Close again: %v, want the same error", err)
	}
	converge(t, ctx, g)
	checkRuns(t, 6, cb)
	if got := b.Current().Assigned; len(got) != 6 {
		t.Errorf("b has %v, want all 6", got)
	}
	if err := a.AddPartitions(ctx, ids("u", 1)); !errors.Is(err, zkalloc.ErrClosed) {
		t.Errorf("AddPartitions after the fatal error: %v, want ErrClosed", err)
	}
	// The name is free again.
	if _, err := g.Join("a"); err != nil {
		t.Errorf("Join a after it stopped: %v", err)
	}
}

// A name whose member node another session holds is refused, as the
// members actor refuses it in production: here, a member that is still
// draining.
func TestJoinWhileClosingRefused(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 2)})
	shared := newRunningOn(t, false)
	a, ca := joinConsume(t, g, "a", shared)
	converge(t, ctx, g)
	ca.hold.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	ca.nextHeld(ctx) // a drains: its member node stays until the ack
	if _, err := g.Join("a"); !errors.Is(err, zkalloc.ErrDuplicateMember) {
		t.Errorf("Join a while a drains: %v, want ErrDuplicateMember", err)
	}
	ca.ack <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := g.Join("a"); err != nil {
		t.Errorf("Join a once it closed: %v", err)
	}
}

func TestStats(t *testing.T) {
	g, ctx := newGroup(t, zkalloctest.Config{Partitions: ids("t", 4)})
	shared := newRunningOn(t, true)
	a, _ := joinConsume(t, g, "a", shared)
	converge(t, ctx, g)
	st := a.Stats()
	if st.SessionState != "up" || st.SessionID == 0 || st.Members != 1 || st.Assigned != 4 || st.Computes == 0 {
		t.Errorf("a alone: %+v, want up, a session, 1 member, 4 assigned, a compute", st)
	}
	if st.RecordWrites == 0 || st.RecordConflicts != 0 {
		t.Errorf("a alone: %+v, want the sticky record written, and no conflict", st)
	}

	joinConsume(t, g, "b", shared)
	converge(t, ctx, g)
	eventually(t, ctx, "two hand-offs done", func() bool { return a.Stats().HandoffsDone == 2 })
	if st := a.Stats(); st.HandoffsStarted != 2 || st.Members != 2 || st.Assigned != 2 || st.ReleaseTimeouts != 0 {
		t.Errorf("a after b joined: %+v, want 2 hand-offs started, 2 members, 2 assigned, no release timeout", st)
	}

	a.Disconnect()
	eventually(t, ctx, "suspended", func() bool { return a.Stats().SessionState == "suspended" })
	a.Reconnect()
	converge(t, ctx, g)
	eventually(t, ctx, "up again", func() bool { return a.Stats().SessionState == "up" })
	if st := a.Stats(); st.Reconnects != 1 {
		t.Errorf("a after a reconnection: Reconnects %d, want 1", st.Reconnects)
	}
}
