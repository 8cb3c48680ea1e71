package session

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
)

// recorder is a subscriber that keeps every state published, in order.
type recorder struct {
	mu     sync.Mutex
	states []State
}

func (r *recorder) Set(st State) {
	r.mu.Lock()
	r.states = append(r.states, st)
	r.mu.Unlock()
}

// take returns the states published since the last take.
func (r *recorder) take() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.states
	r.states = nil
	return got
}

// fakeClient stands for the client's own state, as read by apply.
type fakeClient struct {
	state zk.State
	id    int64
}

func (c *fakeClient) State() zk.State  { return c.state }
func (c *fakeClient) SessionID() int64 { return c.id }

// driver plays client events into a session synchronously, on a fake
// clock, and records what it publishes.
type driver struct {
	s      *Session
	clock  *actor.FakeClock
	client *fakeClient
	rec    *recorder
}

const driverTimeout = 2 * time.Second

func newDriver(cfg Config) *driver {
	clock := actor.NewFakeClock(time.Unix(1000, 0))
	cfg.Servers, cfg.Clock, cfg.Timeout = []string{"127.0.0.1:1"}, clock, driverTimeout
	d := &driver{s: New(cfg), clock: clock, client: &fakeClient{}, rec: &recorder{}}
	d.s.subs = append(d.s.subs, d.rec)
	return d
}

// connect plays a connect response granting session id on a connection
// dialed now, as the wire shows it, then the client's event.
func (d *driver) connect(id int64) {
	now := d.clock.Now()
	d.s.contact.connected(now, now, connectResponse{timeoutMs: int32(driverTimeout / time.Millisecond), sessionID: id})
	d.client.state, d.client.id = zk.StateHasSession, id
	d.event(zk.StateHasSession)
}

func (d *driver) event(st zk.State) {
	d.s.apply(zk.Event{Type: zk.EventSession, State: st}, d.client)
}

// step plays one named step: "up <id>", "down", "expired", "lease" (the
// lease's whole length passes and its timer fires), "sync <ms>":
// the answer to a sync sent ms before now.
func (d *driver) step(t *testing.T, step string) {
	t.Helper()
	var id int64
	switch {
	case step == "down":
		d.client.state = zk.StateDisconnected
		d.event(zk.StateDisconnected)
	case step == "expired":
		d.client.state, d.client.id = zk.StateExpired, 0
		d.event(zk.StateExpired)
	case step == "lease":
		d.clock.Advance(driverTimeout)
		d.s.checkLease()
	case scan(step, "up %d", &id):
		d.connect(id)
	case scan(step, "sync %d", &id):
		sent := d.clock.Now().Add(-time.Duration(id) * time.Millisecond)
		d.s.synced(syncResult{sent: sent, session: d.client.id}, d.client)
	default:
		t.Fatalf("unknown step %q", step)
	}
}

func scan(s, format string, v *int64) bool {
	n, err := fmt.Sscanf(s, format, v)
	return err == nil && n == 1
}

// brief writes published states as "up 1", "lost 1 ended"...
func brief(states []State) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = fmt.Sprintf("%v %d", st.Status, st.SessionID)
		if st.Ended {
			out[i] += " ended"
		}
	}
	return out
}

// TestSessionEnded plays each path that publishes Lost and checks that
// Ended says whether the session ended on the server (expired, replaced)
// or only its lease ran out; a lease-Lost session that turns out to have
// ended is published again.
func TestSessionEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []string
		want  []string
	}{
		{"expired while up", []string{"up 1", "expired"},
			[]string{"up 1", "lost 1 ended"}},
		{"expired while suspended", []string{"up 1", "down", "expired"},
			[]string{"up 1", "suspended 1", "lost 1 ended"}},
		{"lease ran out while up: not ended", []string{"up 1", "lease"},
			[]string{"up 1", "lost 1"}},
		{"lease ran out, then expired: published again, ended", []string{"up 1", "down", "lease", "expired", "up 2"},
			[]string{"up 1", "suspended 1", "lost 1", "lost 1 ended", "up 2"}},
		{"lease ran out, then a new session with no expiry seen", []string{"up 1", "down", "lease", "up 2"},
			[]string{"up 1", "suspended 1", "lost 1", "lost 1 ended", "up 2"}},
		{"replaced while up", []string{"up 1", "up 2"},
			[]string{"up 1", "lost 1 ended", "up 2"}},
		{"replaced while suspended", []string{"up 1", "down", "up 2"},
			[]string{"up 1", "suspended 1", "lost 1 ended", "up 2"}},
		{"an end is reported once", []string{"up 1", "expired", "expired", "up 2"},
			[]string{"up 1", "lost 1 ended", "up 2"}},
		{"lease ran out, then resumed: up, never ended", []string{"up 1", "down", "lease", "up 1", "down", "up 1"},
			[]string{"up 1", "suspended 1", "lost 1", "up 1", "suspended 1", "up 1"}},
	}
	for _, tt := range tests {
		d := newDriver(Config{})
		for _, st := range tt.steps {
			d.step(t, st)
		}
		if got := brief(d.rec.take()); !slices.Equal(got, tt.want) {
			t.Errorf("%s: published %q, want %q", tt.name, got, tt.want)
		}
	}
}
