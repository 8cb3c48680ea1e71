package zktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkalloc/zkalloc/internal/zklaunch"
	"github.com/zkalloc/zkalloc/internal/zktest"
)

// A 3-member ensemble elects a leader; after the leader is killed the
// others elect a new one and a client keeps its session and keeps working.
func TestEnsembleLeaderFailover(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	e := zktest.NewEnsemble(t, 3, zktest.Options{})
	t.Logf("3-member ensemble serving in %v", time.Since(begin).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	addrs := e.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs() = %q, want 3", addrs)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs {
		srvr, err := zktest.FourLetter(ctx, a, "srvr")
		want := "Mode: follower"
		if i == leader {
			want = "Mode: leader"
		}
		if err != nil || !strings.Contains(srvr, want) {
			t.Errorf("member %d srvr = %q, %v; want %s", i, srvr, err, want)
		}
	}

	c := connect(t, addrs, 8*time.Second)
	id := c.SessionID()
	if _, err := c.Create("/failover", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	begin = time.Now()
	if err := e.Kill(leader); err != nil {
		t.Fatal(err)
	}
	newLeader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatalf("Leader() after killing %d = %d", leader, newLeader)
	}
	elected := time.Since(begin)
	if err := e.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	// The client reconnects by itself; writes fail until it has.
	waitUntil(t, 20*time.Second, "a write after failover", func() bool {
		_, err := c.Set("/failover", []byte("1"), -1)
		return err == nil
	})
	t.Logf("new leader %d (was %d) elected %v after the kill; client writing again after %v; client states %q",
		newLeader, leader, elected.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), c.history())
	if got := c.SessionID(); got != id {
		t.Errorf("session after failover = %#x, want the same %#x", got, id)
	}

	// The old leader rejoins as a follower.
	if err := e.Start(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAll(ctx); err != nil { // all running: waits for all to serve
		t.Fatal(err)
	}
	if got, err := e.Leader(ctx); err != nil || got != newLeader {
		t.Errorf("Leader() after the old leader rejoined = %d, %v; want %d", got, err, newLeader)
	}
	data, _, err := c.Get("/failover")
	if err != nil || string(data) != "1" {
		t.Errorf("Get(/failover) = %q, %v; want \"1\"", data, err)
	}

	// A clean stop of every member, then a full restart, keeps the data.
	if err := e.StopAll(); err != nil {
		t.Fatal(err)
	}
	begin = time.Now()
	if err := e.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("full restart serving in %v", time.Since(begin).Round(time.Millisecond))
	waitUntil(t, 20*time.Second, "a read after the full restart", func() bool {
		data, _, err := c.Get("/failover")
		return err == nil && string(data) == "1"
	})

	if err := e.Stop(3); err == nil {
		t.Error("Stop(3) on a 3-member ensemble: no error")
	}
	if err := e.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := e.Leader(ctx); !errors.Is(err, zklaunch.ErrClosed) {
		t.Errorf("Leader after Close: %v, want ErrClosed", err)
	}
}

// A one-member ensemble is a quorum peer that leads itself.
func TestEnsembleOfOne(t *testing.T) {
	t.Parallel()
	e := zktest.NewEnsemble(t, 1, zktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := e.Leader(ctx); err != nil || got != 0 {
		t.Errorf("Leader() = %d, %v; want 0", got, err)
	}
}

// A follower whose quorum link is black-holed goes on answering its
// client, pings included, while the leader, which no longer hears of the
// client's session, expires it after its timeout. Restored, the follower
// rejoins.
func TestEnsembleQuorumBlackhole(t *testing.T) {
	t.Parallel()
	e := zktest.NewEnsemble(t, 3, zktest.Options{QuorumProxies: true, SyncLimit: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	if mode, err := e.Mode(ctx, follower); err != nil || mode != "follower" {
		t.Fatalf("Mode(%d) = %q, %v; want follower", follower, mode, err)
	}
	const timeout = 2 * time.Second
	addrs := e.Addrs()
	c := connect(t, addrs[follower:follower+1], timeout)
	observer := connect(t, addrs[leader:leader+1], 10*time.Second)
	if _, err := c.Create("/cut", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	m := c.mark()

	cut := time.Now()
	if err := e.BlackholeQuorum(follower, true); err != nil {
		t.Fatal(err)
	}
	zktest.WaitGone(t, observer, "/cut", 3*timeout)
	expired := time.Since(cut)
	// The follower has not noticed (it waits syncLimit × tick = 5 s): its
	// client still holds a session and it still says it follows.
	if got := c.since(m); len(got) != 0 {
		t.Errorf("client states %v before the follower noticed the cut; want none", got)
	}
	if mode, err := e.Mode(ctx, follower); err != nil || mode != "follower" {
		t.Errorf("Mode(%d) when the leader expired the session = %q, %v; want follower still", follower, mode, err)
	}
	t.Logf("the leader expired the follower's client's session %v after the cut", expired.Round(time.Millisecond))

	if err := e.BlackholeQuorum(follower, false); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAll(ctx); err != nil { // all running: waits for all to serve
		t.Fatal(err)
	}
	if err := e.BlackholeQuorum(3, true); err == nil {
		t.Error("BlackholeQuorum(3) on a 3-member ensemble: no error")
	}
}

// BlackholeQuorum needs the quorum proxies.
func TestEnsembleQuorumBlackholeNeedsProxies(t *testing.T) {
	t.Parallel()
	e := zktest.NewEnsemble(t, 1, zktest.Options{})
	if err := e.BlackholeQuorum(0, true); err == nil || !strings.Contains(err.Error(), "QuorumProxies") {
		t.Errorf("BlackholeQuorum without proxies = %v, want an error naming QuorumProxies", err)
	}
}

// leaderCut is what isolateLeader measured, from the cut.
type leaderCut struct {
	elected    time.Duration // a new leader among the others
	lastSync   time.Duration // the send time of the last sync the old leader answered
	expired    time.Duration // the client's node gone, on the new leader
	newLeader  int
	oldLeader  int
	syncsAfter bool // the old leader answered a sync sent after the new leader was elected
}

// isolateLeader cuts the leader off with cut, while a client connected to
// it alone syncs every 20 ms, and measures what follows; it restores the
// links and waits for the whole ensemble to serve again.
func isolateLeader(t *testing.T, e *zktest.Ensemble, cut func(i int, on bool) error, timeout time.Duration) leaderCut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addrs := e.Addrs()
	var others []string
	for i, a := range addrs {
		if i != leader {
			others = append(others, a)
		}
	}
	c := connect(t, addrs[leader:leader+1], timeout)
	obs := connect(t, others, 10*time.Second)
	if _, err := c.Create("/isolated", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	synced := make(chan time.Time) // send times of the syncs answered
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			sent := time.Now()
			if _, err := c.Sync("/"); err == nil {
				select {
				case synced <- sent:
				case <-stop:
					return
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond): // the client's pace
			}
		}
	}()
	defer func() { close(stop); <-done }()

	at := time.Now()
	if err := cut(leader, true); err != nil {
		t.Fatal(err)
	}
	r := leaderCut{oldLeader: leader, newLeader: -1}
	var lastSync, elected time.Time
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for r.expired == 0 {
		select {
		case s := <-synced:
			lastSync = s
			r.syncsAfter = r.syncsAfter || !elected.IsZero() && s.After(elected)
			continue
		case <-tick.C:
		case <-deadline:
			t.Fatalf("after 30s: new leader %d elected at +%v, the client's node not gone", r.newLeader, r.elected)
		}
		if r.newLeader < 0 {
			for i := range addrs {
				if mode, _ := e.Mode(ctx, i); i != leader && mode == "leader" {
					r.newLeader, elected, r.elected = i, time.Now(), time.Since(at)
				}
			}
			continue
		}
		if ok, _, err := obs.Exists("/isolated"); err == nil && !ok {
			r.expired = time.Since(at)
		}
	}
	r.lastSync = lastSync.Sub(at)
	if err := cut(leader, false); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAll(ctx); err != nil { // all running: waits for all to serve
		t.Fatal(err)
	}
	return r
}

// Isolating a leader (its quorum and election links silenced, its client
// port open) lets the others elect a new leader after their syncLimit
// timeout, which expires the sessions of the old leader's clients, while
// the old leader answers its clients by itself until its own syncLimit
// has passed. Restored, it rejoins as a follower.
func TestEnsembleIsolateLeader(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	e := zktest.NewEnsemble(t, 3, zktest.Options{QuorumProxies: true, SyncLimit: 2})
	r := isolateLeader(t, e, e.Isolate, timeout)
	t.Logf("leader %d isolated at 0 (tick 500ms, syncLimit 2): it answered a sync sent at +%v; member %d elected at +%v; the client's session (timeout %v) expired at +%v",
		r.oldLeader, r.lastSync.Round(time.Millisecond), r.newLeader, r.elected.Round(time.Millisecond), timeout, r.expired.Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if mode, err := e.Mode(ctx, r.oldLeader); err != nil || mode != "follower" {
		t.Errorf("the old leader after the isolation: %q, %v; want follower", mode, err)
	}
	if err := e.Isolate(3, true); err == nil {
		t.Error("Isolate(3) on a 3-member ensemble: no error")
	}
}

// With Reject, the leader's peers learn of the cut at once and elect a new
// leader while the old one, hearing only silence, still answers its
// client: a deposed leader.
func TestEnsembleRejectLeader(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	// A 1 s tick: the old leader answers for 1.5 to 3 ticks, well past
	// the others' election.
	e := zktest.NewEnsemble(t, 3, zktest.Options{TickTime: time.Second, QuorumProxies: true, SyncLimit: 2})
	r := isolateLeader(t, e, e.Reject, timeout)
	t.Logf("leader %d rejected at 0 (tick 1s, syncLimit 2): member %d elected at +%v; the old leader answered a sync sent at +%v; the client's session (timeout %v) expired at +%v",
		r.oldLeader, r.newLeader, r.elected.Round(time.Millisecond), r.lastSync.Round(time.Millisecond), timeout, r.expired.Round(time.Millisecond))
	if !r.syncsAfter {
		t.Errorf("the old leader answered no sync sent after member %d was elected (+%v); its last was sent at +%v", r.newLeader, r.elected, r.lastSync)
	}
}
