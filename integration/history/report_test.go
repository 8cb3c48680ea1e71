package history_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestCheckHandMadeHistory builds a History literally, out of time order,
// with events the model cannot interpret.
func TestCheckHandMadeHistory(t *testing.T) {
	t.Parallel()
	p0 := rebalance.Partition{Topic: "t", ID: 0}
	h := history.History{Events: []history.Event{
		{Time: ms(10), Kind: history.KindAcked, Member: "a", Seq: 1},
		{Time: ms(0), Kind: history.KindReceived, Member: "a", Seq: 1, Generation: 1, Members: []string{"a"}, Assigned: []rebalance.Partition{p0}},
		{Time: ms(5), Kind: history.KindAcked, Member: "b", Seq: 1},    // b never received 1
		{Time: ms(6), Kind: history.KindAcked, Member: "a", Seq: 7},    // nobody received 7
		{Time: ms(7), Kind: history.KindReceived, Member: "b", Seq: 1}, // 1 again
		{Time: ms(8), Kind: history.EventKind(9), Member: "b"},
	}}
	r := history.Check(h, history.Options{Expected: []rebalance.Partition{p0}, Live: []string{"a"}})
	want := []string{
		"+5ms b: acked seq 1, which it had not received",
		"+6ms a: acked seq 7, which it had not received",
		"+7ms b: received seq 1, already used",
		"+8ms b: unknown event kind 9",
	}
	if got := r.Anomalies; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Anomalies = %q, want %q", got, want)
	}
	if r.Start != ms(0) || r.End != ms(10) || r.Events != 6 || r.Members != 2 || r.Partitions != 1 {
		t.Errorf("Start, End, Events, Members, Partitions = %v, %v, %d, %d, %d", r.Start, r.End, r.Events, r.Members, r.Partitions)
	}
	if h.Events[0].Kind != history.KindAcked {
		t.Error("Check reordered the caller's events")
	}
}

func TestRecoveries(t *testing.T) {
	t.Parallel()
	s := newScript(t)
	s.recv(0, "a", "1", 1, "a b", "t:0", "")
	s.recv(0, "b", "1", 1, "a b", "t:1", "")
	// Member b is killed from 100 to 200; a converges alone at 700.
	s.fault("kill", 100, 200)
	s.close(100, "b")
	s.recv(700, "a", "2", 2, "a", "t:0 t:1", "")
	// A network blip from 800 to 900 that changes nothing.
	s.fault("blip", 800, 900)
	// b restarts at 1000; both converge at 1300 (a acks at 1250).
	s.fault("kill", 1000, 1000)
	s.recv(1000, "b", "3", 3, "a b", "", "")
	s.recv(1200, "a", "3", 3, "a b", "t:0", "t:1")
	s.ack(1250, "a", "3")
	s.recv(1300, "b", "4", 3, "a b", "t:1", "")

	r := history.Check(s.rec.History(), history.Options{
		Expected: parts(t, "t:0 t:1"),
		Live:     []string{"a", "b"},
		Deadline: time.Second,
	})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"kill": 2, "blip": 1}; !maps.Equal(r.FaultsByKind, want) {
		t.Errorf("FaultsByKind = %v, want %v", r.FaultsByKind, want)
	}
	var got []string
	for _, rec := range r.Recoveries {
		got = append(got, fmt.Sprintf("%s %v %v", rec.Kind, rec.Converged, rec.After))
	}
	want := []string{"kill true 500ms", "blip true 0s", "kill true 300ms"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("Recoveries = %q, want %q", got, want)
	}
	if r.FaultsEnd != ms(1000) {
		t.Errorf("FaultsEnd = %v, want the latest fault end", r.FaultsEnd)
	}
	if g := gaps([]history.Gap{r.LongestGap}); g[0] != "t:1 100-700" {
		t.Errorf("LongestGap = %s, want t:1 100-700", g[0])
	}
	if g := gaps(r.LongestGaps); strings.Join(g, ", ") != "t:1 100-700" {
		t.Errorf("LongestGaps = %q", g)
	}
}

func TestRecoveryNeverConverged(t *testing.T) {
	t.Parallel()
	s := newScript(t)
	s.recv(0, "a", "1", 1, "a", "t:0", "")
	s.fault("partition", 100, 200)
	s.recv(150, "a", "2", 2, "a", "", "t:0")
	r := history.Check(s.rec.History(), history.Options{Expected: parts(t, "t:0"), Live: []string{"a"}})
	if len(r.Recoveries) != 1 || r.Recoveries[0].Converged {
		t.Errorf("Recoveries = %+v, want one that never converged", r.Recoveries)
	}
	if !strings.Contains(r.Markdown(), "| partition | 1 | - | - | 1 |") {
		t.Errorf("Markdown() =\n%s\nwant a row for the unrecovered fault", r.Markdown())
	}
}

func TestErrListsFirstFew(t *testing.T) {
	t.Parallel()
	s := newScript(t)
	for i := range 5 {
		m := fmt.Sprint("m", i)
		s.recv(i, m, "1", 1, "m0 m1 m2 m3 m4", "t:0", "")
	}
	r := history.Check(s.rec.History(), history.Options{
		Expected: parts(t, "t:0"),
		Live:     []string{"m0", "m1", "m2", "m3", "m4"},
	})
	err := r.Err()
	if !errors.Is(err, history.ErrFailed) {
		t.Fatalf("Err() = %v, want ErrFailed", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"(a) double ownerships: 10",
		"t:0 held by m0 and m1 from +1ms to the end (+4ms) (both assigned)",
		"…",
		"(c) not converged: t:0 assigned to m0 and m1 and m2 and m3 and m4",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Err() =\n%s\nwant it to contain %q", msg, want)
		}
	}
	if n := strings.Count(msg, "held by"); n != 3 {
		t.Errorf("Err() lists %d double ownerships, want 3", n)
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	p := rebalance.Partition{Topic: "t", ID: 3}
	tests := []struct{ got, want string }{
		{history.KindReceived.String(), "received"},
		{history.KindAcked.String(), "acked"},
		{history.KindClosed.String(), "closed"},
		{history.KindExpected.String(), "expected"},
		{history.KindClosing.String(), "closing"},
		{history.EventKind(7).String(), "EventKind(7)"},
		{history.Overlap{Partition: p, First: "a", Second: "b", From: ms(0), To: ms(1500), Unacked: true}.String(),
			"t:3 held by a and b from 12:00:00.000 to 12:00:01.500 (revocation not acked by a)"},
		{history.Gap{Partition: p, From: ms(0), To: ms(250), Open: true}.String(),
			"t:3 unowned for 250ms from 12:00:00.000 to the end (12:00:00.250)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func ExampleReport_Markdown() {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return clock.Add(time.Duration(ms) * time.Millisecond) }
	now := clock
	rec := history.NewRecorder(func() time.Time { return now })
	p0, p1 := rebalance.Partition{Topic: "t", ID: 0}, rebalance.Partition{Topic: "t", ID: 1}

	rec.Received("a", 1, []string{"a", "b"}, []rebalance.Partition{p0}, nil)
	rec.Received("b", 1, []string{"a", "b"}, []rebalance.Partition{p1}, nil)
	rec.Fault("kill", at(100), at(100))
	now = at(100)
	rec.Closed("b")
	now = at(400)
	seq := rec.Received("a", 2, []string{"a"}, []rebalance.Partition{p0, p1}, nil)
	now = at(401)
	rec.Acked("a", seq)

	r := history.Check(rec.History(), history.Options{
		Expected: []rebalance.Partition{p0, p1},
		Deadline: time.Second,
		Live:     []string{"a"},
	})
	fmt.Println(r.Err())
	fmt.Print(r.Markdown())
	// Output:
	// <nil>
	// | figure | value |
	// | --- | --- |
	// | events | 5 from 2 members over 401ms |
	// | partitions | 2 |
	// | faults | kill ×1, the last ending at +100ms |
	// | (a) double ownerships | 0 |
	// | (b) partitions left unowned | 0 (deadline 1s) |
	// | longest unowned gap | 300ms (t:1 at +100ms) |
	// | (c) converged | yes, generation 2 |
	// | anomalies | 0 |
	//
	// | fault | count | converged after, mean | max | never converged |
	// | --- | --- | --- | --- | --- |
	// | kill | 1 | 300ms | 300ms | 0 |
}
