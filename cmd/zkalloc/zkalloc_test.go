package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

const testTimeout = 30 * time.Second

// cli runs the command in process and returns its exit code and output.
func cli(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// startMember starts an allocator whose consumer acks every Update; opts
// change its config.
func startMember(t *testing.T, servers []string, group, name string, seed map[string][]int32, opts ...func(*zkalloc.Config)) *zkalloc.Allocator {
	t.Helper()
	cfg := zkalloc.Config{
		Servers: servers, Group: group, Member: name, Partitions: seed,
		SessionTimeout: 2 * time.Second,
		Logger:         slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := range a.Updates() {
			u.Ack()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		a.Close()
		<-done
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		a.Close()
		<-done
	})
	return a
}

// balanced makes a member run the stateless Balanced strategy, which
// status runs itself to tell hand-offs (the default, sticky, needs its
// record).
func balanced(c *zkalloc.Config) { c.Strategy = rebalance.Balanced }

// eventually polls cond until it holds, failing the test at the deadline
// with what the last check said.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, testTimeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStatusJSONMatchesMembers(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	group := "status"
	seed := map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, "audit": {0, 1, 2}}
	members := map[string]*zkalloc.Allocator{}
	for i, name := range []string{"m1", "m2", "m3"} {
		var s map[string][]int32
		if i == 0 {
			s = seed
		}
		members[name] = startMember(t, servers, group, name, s, balanced)
	}
	var last groupStatus
	eventually(t, "status -json matches every member's Current().Assigned", func() (bool, string) {
		code, out, errOut := cli(t, context.Background(), "-servers", srv.Addr(), "-group", group, "-json", "status")
		if code != 0 {
			return false, fmt.Sprintf("exit %d: %s", code, errOut)
		}
		var st groupStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status -json printed no JSON object: %v\n%s", err, out)
		}
		last = st
		var names []string
		for _, m := range st.Members {
			names = append(names, m.Name)
		}
		if !slices.Equal(names, []string{"m1", "m2", "m3"}) {
			return false, fmt.Sprintf("members %v", names)
		}
		byOwner := map[string][]string{}
		for p, m := range st.Owners {
			byOwner[m] = append(byOwner[m], p)
		}
		total := 0
		for name, a := range members {
			u := a.Current()
			var want []string
			for _, p := range u.Assigned {
				want = append(want, p.String())
			}
			got := byOwner[name]
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) || len(u.Pending) > 0 {
				return false, fmt.Sprintf("%s: status owners %v, Assigned %v, Pending %v", name, got, want, u.Pending)
			}
			total += len(want)
		}
		if total != 15 || len(st.Unowned) != 0 || !st.HandoffsKnown || len(st.Handoffs) != 0 {
			return false, fmt.Sprintf("%d assigned, unowned %v, hand-offs %v (known %v)", total, st.Unowned, st.Handoffs, st.HandoffsKnown)
		}
		return true, ""
	})
	if last.Partitions["events"] != "0-11" || last.Partitions["audit"] != "0-2" || last.Strategy != "balanced" {
		t.Errorf("partitions %v, strategy %q", last.Partitions, last.Strategy)
	}
	for _, m := range last.Members {
		if m.Host == "" || m.PID == 0 || !strings.HasPrefix(m.Session, "0x") || m.Version == "" {
			t.Errorf("member %+v: missing details", m)
		}
	}

	// The human table names every member and the owners.
	code, out, errOut := cli(t, context.Background(), "-servers", srv.Addr(), "-group", group, "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("status:\n%s", out)
	for _, want := range []string{"3 members", "m1", "m2", "m3", "OWNER", "0-11", "hand-offs in progress: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
}

func TestStatusUnreachableExits1(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	began := time.Now()
	code, _, errOut := cli(t, context.Background(), "-servers", addr, "-group", "g", "-timeout", "500ms", "status")
	took := time.Since(began)
	if code != exitError {
		t.Errorf("exit %d, want %d; stderr %s", code, exitError, errOut)
	}
	if !strings.Contains(errOut, "no session") || !strings.Contains(errOut, addr) {
		t.Errorf("stderr %q does not say it could not reach %s", errOut, addr)
	}
	if !strings.Contains(errOut, "dial tcp "+addr+": connect: connection refused") {
		t.Errorf("stderr %q lacks the dial error", errOut)
	}
	if took > 5*time.Second {
		t.Errorf("took %v with -timeout 500ms", took)
	}
}

func TestBadUsageExits2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"status"}, // no -group
		{"-group", "g", "status", "extra"},
		{"-group", "g", "partitions"},
		{"-group", "g", "partitions", "shuffle"},
		{"-group", "g", "partitions", "add"},
		{"-group", "g", "partitions", "add", "events"},
		{"-group", "g", "partitions", "add", "events:x"},
		{"-group", "g", "partitions", "add", "events:-1"},
		{"-group", "g", "-nosuchflag", "status"},
		{"-group", "g", "-servers", "a:b:c", "status"},
		{"-group", "g", "-auth", "digest", "status"},
		{"-group", "g", "-timeout", "0s", "status"},
	} {
		code, _, errOut := cli(t, context.Background(), args...)
		if code != exitUsage {
			t.Errorf("zkalloc %q: exit %d, want %d; stderr %s", args, code, exitUsage, errOut)
		}
	}
	if code, _, _ := cli(t, context.Background(), "-h"); code != exitOK {
		t.Errorf("-h: exit %d, want 0", code)
	}
}

func TestPartitionsRoundTrip(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	base := []string{"-servers", srv.Addr() + "/chroot", "-group", "parts", "-json"}
	// No such group yet: list and status fail with 1.
	for _, cmd := range [][]string{{"partitions", "list"}, {"status"}} {
		if code, _, errOut := cli(t, context.Background(), append(base, cmd...)...); code != exitError || !strings.Contains(errOut, `no group "parts" under /chroot/zkalloc (no groups)`) {
			t.Errorf("%v on a missing group: exit %d, stderr %q; want 1, no group", cmd, code, errOut)
		}
	}
	code, _, errOut := cli(t, context.Background(), append(base, "partitions", "add", "-create", "events:0-7,10", "audit:3", "events:20")...)
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	code, out, errOut := cli(t, context.Background(), append(base, "partitions", "list")...)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("list -json: %v: %s", err, out)
	}
	if want := map[string]string{"events": "0-7,10,20", "audit": "3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("list after add = %v, want %v", got, want)
	}
	code, _, errOut = cli(t, context.Background(), append(base, "partitions", "remove", "events:5-7,20", "audit:3")...)
	if code != 0 {
		t.Fatalf("remove: exit %d: %s", code, errOut)
	}
	// audit, emptied, keeps its node with no data: it is no topic of the
	// set for list and status.
	_, out, _ = cli(t, context.Background(), "-servers", srv.Addr()+"/chroot", "-group", "parts", "partitions", "list")
	if out != "events:0-4,10\n" {
		t.Errorf("list after remove = %q, want %q", out, "events:0-4,10\n")
	}
	code, out, errOut = cli(t, context.Background(), append(base, "status")...)
	var st groupStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if fmt.Sprint(st.Partitions) != "map[events:0-4,10]" || len(st.Corrupt) > 0 {
		t.Errorf("status after remove: partitions %v, corrupt %v; want events:0-4,10 alone", st.Partitions, st.Corrupt)
	}

	// A member started on the same chroot sees the set the command wrote.
	a := startMember(t, []string{srv.Addr() + "/chroot"}, "parts", "m1", nil)
	if got := len(a.Current().Assigned); got != 6 {
		t.Errorf("member assigned %v, want the 6 partitions added by the command", a.Current().Assigned)
	}
}

// syncBuffer is a bytes.Buffer safe for the watch goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWatchPrintsChanges(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	base := []string{"-servers", srv.Addr(), "-group", "watched"}
	if code, _, errOut := cli(t, context.Background(), append(base, "partitions", "add", "-create", "events:0-3")...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, append(base, "watch"), &out, &errOut) }()
	waitFor := func(what string) {
		t.Helper()
		eventually(t, "watch prints "+what, func() (bool, string) {
			select {
			case code := <-exited:
				t.Fatalf("watch exited early with %d: %s", code, errOut.String())
			default:
			}
			return strings.Contains(out.String(), what), out.String()
		})
	}
	waitFor("watching (group watched: 0 members, 1 topics")

	if code, _, e := cli(t, context.Background(), append(base, "partitions", "add", "events:4-5", "audit:0")...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, e)
	}
	waitFor("added events:4-5")
	waitFor("topic-added audit:0")

	startMember(t, []string{srv.Addr()}, "watched", "m1", nil)
	waitFor("joined m1")
	waitFor("claimed m1 events:0-5")
	waitFor("claimed m1 audit:0")

	if code, _, e := cli(t, context.Background(), append(base, "partitions", "remove", "events:5")...); code != 0 {
		t.Fatalf("remove: exit %d: %s", code, e)
	}
	waitFor("removed events:5")
	waitFor("released m1 events:5")

	// Emptied and filled again: its node stays, and watch says as much as
	// when it was deleted and created.
	if code, _, e := cli(t, context.Background(), append(base, "partitions", "remove", "audit:0")...); code != 0 {
		t.Fatalf("remove: exit %d: %s", code, e)
	}
	waitFor("topic-removed audit:0")
	if code, _, e := cli(t, context.Background(), append(base, "partitions", "add", "audit:1")...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, e)
	}
	waitFor("topic-added audit:1")

	// Drain marks, made and deleted by drain and undrain.
	startMember(t, []string{srv.Addr()}, "watched", "m2", nil)
	waitFor("joined m2")
	if code, _, e := cli(t, context.Background(), append(base, "drain", "m1")...); code != 0 {
		t.Fatalf("drain: exit %d: %s", code, e)
	}
	waitFor("drained m1")
	if code, _, e := cli(t, context.Background(), append(base, "undrain", "m1")...); code != 0 {
		t.Fatalf("undrain: exit %d: %s", code, e)
	}
	waitFor("undrained m1")

	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("watch exited %d after interrupt: %s", code, errOut.String())
		}
	case <-time.After(testTimeout):
		t.Fatal("watch did not return after its context ended")
	}
}

// A group whose nodes are written with credentials, as Config.Auth does
// by default (all for the identity, read for everyone): status reads it
// without -auth, and partitions add needs -auth.
func TestPartitionsAuth(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	conn, _, err := zk.Connect([]string{srv.Addr()}, 5*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.AddAuth("digest", []byte("user:secret")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "user", "secret"), zk.WorldACL(zk.PermRead)...)
	for _, p := range []string{"/zkalloc", "/zkalloc/groups", "/zkalloc/groups/locked", "/zkalloc/groups/locked/partitions"} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"-servers", srv.Addr(), "-group", "locked"}
	if code, out, errOut := cli(t, context.Background(), append(base, "-json", "status")...); code != 0 || !strings.Contains(out, `"members": []`) {
		t.Errorf("status without -auth: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if code, _, errOut := cli(t, context.Background(), append(base, "partitions", "add", "events:0")...); code != exitError || !strings.Contains(errOut, "authenticated") {
		t.Errorf("add without -auth: exit %d, want 1; stderr %s", code, errOut)
	}
	if code, out, errOut := cli(t, context.Background(), append(base, "-auth", "digest:user:secret", "partitions", "add", "events:0")...); code != 0 || out != "events:0\n" {
		t.Errorf("add with -auth: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// TestStatusShowsKeptSeats: with DepartureDelay, a member that left keeps
// its seat and its partitions pause; status names the seat and the
// paused partitions, and counts them as no hand-off.
func TestStatusShowsKeptSeats(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	group := "seats"
	seed := map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}
	delay := func(c *zkalloc.Config) { c.DepartureDelay = time.Minute }
	m1 := startMember(t, []string{srv.Addr()}, group, "m1", seed, delay, balanced)
	m2 := startMember(t, []string{srv.Addr()}, group, "m2", nil, delay, balanced)
	eventually(t, "both members hold their shares", func() (bool, string) {
		u1, u2 := m1.Current(), m2.Current()
		n := len(u1.Assigned) + len(u2.Assigned)
		return n == 12 && len(u1.Pending)+len(u2.Pending) == 0, fmt.Sprintf("%d assigned", n)
	})
	gone := m2.Current().Assigned
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "status shows m2's seat and its paused partitions", func() (bool, string) {
		code, out, errOut := cli(t, context.Background(), "-servers", srv.Addr(), "-group", group, "-json", "status")
		if code != 0 {
			return false, fmt.Sprintf("exit %d: %s", code, errOut)
		}
		var st groupStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status -json: %v\n%s", err, out)
		}
		var want []string
		for _, p := range gone {
			want = append(want, p.String())
		}
		ok := slices.Equal(st.Seats, []string{"m2"}) && slices.Equal(st.Paused, want) &&
			st.HandoffsKnown && len(st.Handoffs) == 0
		return ok, fmt.Sprintf("seats %v, paused %v (want %v), hand-offs %v", st.Seats, st.Paused, want, st.Handoffs)
	})
}
