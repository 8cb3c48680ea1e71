package zksession

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The log's fields say what they name: the first connection logs
// reconnects=0 (it is no reconnection; the second logs 1), and the
// warning of a lease run out gives the time of the last reply, not the
// time of the connection.
func TestSessionLogFields(t *testing.T) {
	t.Parallel()
	l := &records{all: true}
	d := newDriver(Config{Logger: slog.New(l)})
	// next returns the record msg that the step just played logged first:
	// the driver plays steps in this goroutine.
	next := func(msg string) record {
		t.Helper()
		got := l.kept
		l.kept = nil
		if len(got) == 0 || !strings.Contains(got[0].Msg, msg) {
			t.Fatalf("logged %+v, want first a record %q", got, msg)
		}
		return got[0]
	}

	d.step(t, "up 1")
	if r := next("session up"); r.Attrs["reconnects"] != "0" || r.Attrs["session"] != "0x1" {
		t.Errorf("first connection logged %v, want session=0x1 reconnects=0", r.Attrs)
	}
	d.step(t, "down")
	next("session suspended")
	d.step(t, "up 1")
	if r := next("session up"); r.Attrs["reconnects"] != "1" {
		t.Errorf("second connection logged %v, want reconnects=1", r.Attrs)
	}

	// A server answers 1 s after the connection; the lease then runs out.
	connected := d.clock.Now()
	d.clock.Advance(time.Second)
	replied := d.clock.Now()
	d.s.contact.replied(replied)
	d.clock.Advance(driverTimeout)
	d.s.checkLease()
	r := next("not been heard from within the session lease")
	if r.Attrs["lastReply"] != replied.String() {
		t.Errorf("lease warning: lastReply=%s, want the last reply's time %s (the connection was at %s)", r.Attrs["lastReply"], replied, connected)
	}
}
