package zksession

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/session"
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
	cfg.Dialer = net.DialTimeout
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
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
// lease's whole length passes and its timer fires), "|" (a mark among the
// states recorded), "wait <ms>" (ms pass
// and the lease's timer fires), "sync <ms>" or "commit <ms>" (the answer
// to a sync, or to a check the ensemble committed, sent ms before now).
func (d *driver) step(t *testing.T, step string) {
	t.Helper()
	var id int64
	switch {
	case step == "|": // a mark in what was published, to show when
		d.rec.Set(State{State: session.State{Status: mark}})
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
	case scan(step, "wait %d", &id):
		d.clock.Advance(time.Duration(id) * time.Millisecond)
		d.s.checkLease()
	case scan(step, "sync %d", &id), scan(step, "commit %d", &id):
		sent := d.clock.Now().Add(-time.Duration(id) * time.Millisecond)
		d.s.synced(syncResult{sent: sent, session: d.client.id, committed: strings.HasPrefix(step, "commit")}, d.client)
	default:
		t.Fatalf("unknown step %q", step)
	}
}

func scan(s, format string, v *int64) bool {
	n, err := fmt.Sscanf(s, format, v)
	return err == nil && n == 1
}

// mark is the status of the marks that the step "|" records.
const mark session.Status = -1

// brief writes published states as "up 1", "lost 1 ended"...
func brief(states []State) []string {
	out := make([]string, len(states))
	for i, st := range states {
		if st.Status == mark {
			out[i] = "|"
			continue
		}
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

// TestSessionQuorumLease plays the quorum lease (Config.QuorumCheck):
// only committed checks renew it, and a session resumed after its lease
// ran out is Up again only once a check on the new connection commits.
// The granted timeout is 2 s, so the lease runs 1.6 s.
func TestSessionQuorumLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		quorum bool
		steps  []string
		want   []string
	}{
		{"syncs answered keep a sync lease", false,
			[]string{"up 1", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500"},
			[]string{"up 1"}},
		{"quorum: syncs answered do not keep it", true,
			[]string{"up 1", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500", "sync 0", "wait 500"},
			[]string{"up 1", "lost 1"}},
		{"quorum: committed checks keep it", true,
			[]string{"up 1", "wait 500", "commit 0", "wait 500", "commit 0", "wait 500", "commit 0", "wait 500", "commit 0", "wait 500"},
			[]string{"up 1"}},
		{"resumed after the lease ran out: up at once with syncs", false,
			[]string{"up 1", "down", "lease", "up 1", "|"},
			[]string{"up 1", "suspended 1", "lost 1", "up 1", "|"}},
		{"quorum: resumed after the lease ran out: up once a check commits", true,
			[]string{"up 1", "down", "lease", "up 1", "sync 0", "|", "commit 0"},
			[]string{"up 1", "suspended 1", "lost 1", "|", "up 1"}},
		{"quorum: resumed within the lease: up at once", true,
			[]string{"up 1", "down", "wait 500", "up 1", "wait 1000", "commit 0", "wait 500"},
			[]string{"up 1", "suspended 1", "up 1"}},
		{"quorum: resumed within the lease, no check commits: lost when it runs out", true,
			[]string{"up 1", "down", "wait 500", "up 1", "sync 0", "wait 1000", "sync 0", "wait 500"},
			[]string{"up 1", "suspended 1", "up 1", "lost 1"}},
	}
	for _, tt := range tests {
		cfg := Config{}
		if tt.quorum {
			cfg.QuorumCheck = "/group"
		}
		d := newDriver(cfg)
		for _, st := range tt.steps {
			d.step(t, st)
		}
		got := brief(d.rec.take())
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: published %q, want %q", tt.name, got, tt.want)
		}
	}
}
