package zksession

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// waitAsync starts l.wait and returns a channel with its result.
func waitAsync(l *link, stop <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.wait(stop)
		done <- err
	}()
	return done
}

// blocked waits until n requests wait on l, and checks that done is
// still empty.
func blocked(t *testing.T, l *link, n int, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		w := l.waiting
		l.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", w, n)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done: // never ready when done is nil
		t.Fatalf("wait returned %v; want it to block", err)
	default:
	}
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return")
		return nil
	}
}

func TestLinkOpensOnTheFirstSession(t *testing.T) {
	l := newLink()
	done := make(chan int64, 1)
	go func() {
		session, err := l.wait(nil)
		if err != nil {
			t.Errorf("wait = %v, want nil once the session is up", err)
		}
		done <- session
	}()
	gen := l.dialed()
	blocked(t, l, 1, nil)
	l.connected(gen, 0x10)
	if session := <-done; session != 0x10 {
		t.Fatalf("let through in session %#x, want 0x10", session)
	}
	if _, err := l.wait(nil); err != nil {
		t.Fatalf("wait on an open link = %v", err)
	}
}

// broken returns a link whose session 0x10 was up, with a watch set if
// watched, until its connection failed.
func broken(watched bool) *link {
	l := newLink()
	gen := l.dialed()
	l.connected(gen, 0x10)
	if watched {
		l.watch()
	}
	l.ended(gen)
	return l
}

func TestLinkResumedWithWatchesWaitsForThemResent(t *testing.T) {
	l := broken(true)
	done := waitAsync(l, nil)
	blocked(t, l, 1, done)
	gen := l.dialed()
	l.connected(gen, 0x10) // resumed
	blocked(t, l, 1, done)
	l.wrote(gen, 7, opGetData) // a read: not the watches
	blocked(t, l, 1, done)
	l.wrote(gen, 8, opSetWatches)
	if err := result(t, done); err != nil {
		t.Fatalf("wait = %v, want nil once the watches are re-sent", err)
	}
}

func TestLinkResumedWithoutWatchesOpensAtOnce(t *testing.T) {
	l := broken(false)
	gen := l.dialed()
	l.connected(gen, 0x10)
	if err := result(t, waitAsync(l, nil)); err != nil {
		t.Fatalf("wait = %v", err)
	}
}

func TestLinkResumedOpensAfterResumeWaitIfNoWatchesAreResent(t *testing.T) {
	l := broken(true)
	gen := l.dialed()
	start := time.Now()
	l.connected(gen, 0x10)
	if err := result(t, waitAsync(l, nil)); err != nil {
		t.Fatalf("wait = %v", err)
	}
	if waited := time.Since(start); waited < resumeWait {
		t.Errorf("opened after %v, want resumeWait (%v)", waited, resumeWait)
	}
}

func TestLinkFailsRequestsOfAnExpiredSession(t *testing.T) {
	l := broken(false)
	done := waitAsync(l, nil)
	blocked(t, l, 1, done)
	gen := l.dialed()
	l.connected(gen, 0) // the server expired 0x10
	if err := result(t, done); !errors.Is(err, zk.ErrSessionExpired) {
		t.Fatalf("waiting request: %v, want zk.ErrSessionExpired", err)
	}
	if _, err := l.wait(nil); !errors.Is(err, zk.ErrSessionExpired) {
		t.Fatalf("request before the new session: %v, want zk.ErrSessionExpired", err)
	}
	gen = l.dialed()
	l.connected(gen, 0x20)
	session, err := l.wait(nil)
	if err != nil {
		t.Fatalf("request in the new session: %v", err)
	}
	l.done(session)
	// One that waited through a break straight into a new session (the
	// expiry unseen) fails too.
	l.ended(gen)
	done = waitAsync(l, nil)
	blocked(t, l, 1, done)
	gen = l.dialed()
	l.connected(gen, 0x30)
	if err := result(t, done); !errors.Is(err, zk.ErrSessionExpired) {
		t.Fatalf("waiting request: %v, want zk.ErrSessionExpired", err)
	}
}

func TestLinkIgnoresAnOldConnection(t *testing.T) {
	l := newLink()
	old := l.dialed()
	gen := l.dialed()
	l.connected(old, 0x10)
	done := waitAsync(l, nil)
	blocked(t, l, 1, done)
	l.connected(gen, 0x10)
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	l.ended(old)
	if err := result(t, waitAsync(l, nil)); err != nil {
		t.Fatalf("the current connection is still up: %v", err)
	}
}

func TestLinkWaitGivesUpOnStop(t *testing.T) {
	l := newLink()
	stop := make(chan struct{})
	done := waitAsync(l, stop)
	blocked(t, l, 1, done)
	close(stop)
	if err := result(t, done); !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("wait = %v, want zk.ErrClosing", err)
	}
}

const (
	opCreate  = 1
	opGetData = 4
	opPing    = 11
)

// A request the client took in one session and still holds when a new one
// begins is refused on the wire, and the link stays closed until it has
// returned.
func TestLinkFencesOffRequestsOfAnEarlierSession(t *testing.T) {
	for _, redial := range []bool{false, true} {
		l := newLink()
		gen := l.dialed()
		l.connected(gen, 0x10)
		old, err := l.wait(nil) // goes to the client, which still holds it when...
		if err != nil {
			t.Fatal(err)
		}
		l.ended(gen) // ...its connection fails
		gen = l.dialed()
		l.connected(gen, 0) // the server expired 0x10
		gen = l.dialed()
		l.connected(gen, 0x20)
		done := waitAsync(l, nil)
		blocked(t, l, 1, done)
		if l.wrote(gen, -2, opPing) != true || l.wrote(gen, 9, opClose) != true {
			t.Error("the client's own ping or close refused")
		}
		if l.wrote(gen, 5, opCreate) {
			t.Fatal("a request of session 0x10 may be written in session 0x20")
		}
		if redial {
			// The refused write fails the connection; the request
			// returns and the client dials again, resuming 0x20.
			l.ended(gen)
			l.done(old)
			blocked(t, l, 1, done)
			gen = l.dialed()
			l.connected(gen, 0x20)
		} else {
			l.done(old) // answered otherwise while the connection stays up
		}
		if err := result(t, done); err != nil {
			t.Fatalf("request of session 0x20: %v", err)
		}
		if !l.wrote(gen, 10, opCreate) {
			t.Error("a request of session 0x20 refused")
		}
	}
}

// A request still in the client when its session resumes goes out.
func TestLinkLetsARequestOfTheResumedSessionOut(t *testing.T) {
	l := newLink()
	gen := l.dialed()
	l.connected(gen, 0x10)
	if _, err := l.wait(nil); err != nil {
		t.Fatal(err)
	}
	l.ended(gen)
	gen = l.dialed()
	l.connected(gen, 0x10)
	if !l.wrote(gen, 5, opCreate) {
		t.Error("a request of the resumed session refused")
	}
	if _, err := l.wait(nil); err != nil {
		t.Errorf("request after the resume: %v", err)
	}
}
