package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestStatusShowsWeightsAndDrains: status shows each member's weight and
// whether it is drained, the marks of names not live, the record's
// generation and zxids and each member's count in it; JSON too.
func TestStatusShowsWeightsAndDrains(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	g := newDrainGroup(t, srv, "st")
	g.member("a", sticky(0)) // no weight given: 1
	g.member("b", sticky(3))
	g.member("n", sticky(1)) // not in the record
	head, _ := g.record([]rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}, {Name: "gone", Weight: 1}}, 0x1234, 0x5678)
	if code, _, errOut := g.run("drain", "b", "gone"); code != 0 {
		t.Fatalf("drain: exit %d: %s", code, errOut)
	}

	code, out, errOut := g.run("-json", "status")
	var st groupStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status -json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	ea, _ := head.Of("a")
	eb, _ := head.Of("b")
	type row struct {
		name     string
		weight   int
		drained  bool
		inRecord int // -1: absent
	}
	var got []row
	for _, m := range st.Members {
		r := row{m.Name, m.Weight, m.Drained, -1}
		if m.InRecord != nil {
			r.inRecord = *m.InRecord
		}
		got = append(got, r)
	}
	if want := []row{{"a", 1, false, ea.Count}, {"b", 3, true, eb.Count}, {"n", 1, false, -1}}; !slices.Equal(got, want) {
		t.Errorf("members %+v, want %+v", got, want)
	}
	if len(st.DrainedAbsent) != 1 || st.DrainedAbsent[0].Name != "gone" || st.DrainedAbsent[0].At == "" {
		t.Errorf("drained_absent %+v, want gone's mark", st.DrainedAbsent)
	}
	if want := (recordStatus{Generation: 1, MembersZxid: "0x1234", PartitionsZxid: "0x5678"}); st.Record == nil || *st.Record != want {
		t.Errorf("record %+v, want %+v", st.Record, want)
	}
	for _, field := range []string{`"weight": 3`, `"drained": true`, `"drained": false`, `"in_record": `} {
		if !strings.Contains(out, field) {
			t.Errorf("status -json lacks %s:\n%s", field, out)
		}
	}

	code, out, errOut = g.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("status:\n%s", out)
	lines := strings.Split(out, "\n")
	line := func(prefix string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(l)
			}
		}
		t.Errorf("status: no line starting %q", prefix)
		return nil
	}
	if !strings.Contains(out, "assignment record: generation 1, computed for members zxid 0x1234, partitions zxid 0x5678\n") {
		t.Errorf("status lacks the record's line")
	}
	if f := line("MEMBER "); !slices.Equal(f[len(f)-5:], []string{"WEIGHT", "DRAINED", "OWNS", "IN", "RECORD"}) {
		t.Errorf("member header %q", f)
	}
	for _, tt := range []struct {
		name string
		want []string // the last columns: weight, drained, owns, in record
	}{
		{"a ", []string{"1", "-", "0", fmt.Sprint(ea.Count)}},
		{"b ", []string{"3", "drained", "0", fmt.Sprint(eb.Count)}},
		{"n ", []string{"1", "-", "0", "-"}},
	} {
		if f := line(tt.name); len(f) < 4 || !slices.Equal(f[len(f)-4:], tt.want) {
			t.Errorf("member %s: %q, want it to end %q", tt.name, f, tt.want)
		}
	}
	if !strings.Contains(out, "(drained, not live: gone (since ") {
		t.Errorf("status does not list gone's mark")
	}

	// Without a record, no record line and no column for it.
	h := newDrainGroup(t, srv, "norecord")
	h.member("a", sticky(2))
	code, out, _ = h.run("status")
	if f := strings.Fields(strings.Split(out, "\n")[2]); code != 0 || strings.Contains(out, "assignment record:") || f[len(f)-1] != "OWNS" {
		t.Errorf("status without a record: exit %d:\n%s", code, out)
	}
}

// TestStatusStickyHandoffs: in a group of the sticky strategy, status
// reads the record's shares to tell hand-offs (the record gives a
// partition to a member that does not hold its claim) and the partitions
// paused for a seat, so status -check counts them as no problem; a
// record that gives partitions to a name neither live nor seated (not
// yet computed for the members) makes them unknown, and -check says why.
func TestStatusStickyHandoffs(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	g := newDrainGroup(t, srv, "sticky")
	g.member("a", sticky(1))
	g.member("b", sticky(1))
	g.create(g.paths.Seat("s"), nil)
	_, assigned := g.record([]rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "s", Weight: 1}}, 1, 2)
	// events:29 leaves the set: the record still has it, status drops it.
	if code, _, errOut := g.run("partitions", "remove", "events:29"); code != 0 {
		t.Fatalf("remove: exit %d: %s", code, errOut)
	}
	// a holds its own and the first of b's; b's others have no claim.
	claim := func(p rebalance.Partition, m string) { g.create(g.paths.Owners()+"/"+p.String(), []byte(m)) }
	for _, p := range assigned["a"] {
		claim(p, "a")
	}
	claim(assigned["b"][0], "a")
	var want []handoffStatus
	for i, p := range assigned["b"] {
		if p.ID == 29 {
			continue
		}
		h := handoffStatus{Partition: p.String(), To: "b"}
		if i == 0 {
			h.From = "a"
		}
		want = append(want, h)
	}
	var paused []string
	for _, p := range assigned["s"] {
		if p.ID != 29 {
			paused = append(paused, p.String())
		}
	}

	code, out, errOut := g.run("-json", "status")
	var st groupStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status -json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	for i := range st.Handoffs {
		st.Handoffs[i].Age = ""
	}
	if !st.HandoffsKnown || st.Strategy != "sticky" || !slices.Equal(st.Handoffs, want) || !slices.Equal(st.Paused, paused) {
		t.Errorf("strategy %q, hand-offs %+v (known %v: %s), paused %v; want %+v, paused %v", st.Strategy, st.Handoffs, st.HandoffsKnown, st.HandoffsUnknown, st.Paused, want, paused)
	}
	if code, out, errOut := g.run("status", "-check", "-max-handoff-age", "1h"); code != 0 {
		t.Errorf("status -check: exit %d: %s%s", code, out, errOut)
	}

	// A drain is a change of the group the hand-offs date from.
	if code, _, errOut := g.run("drain", "a"); code != 0 {
		t.Fatalf("drain a: exit %d: %s", code, errOut)
	}
	_, mark, err := g.conn.Get(g.paths.DrainedMember("a"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := connect(context.Background(), options{servers: g.addr, root: "/zkalloc", group: g.paths.Group, timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := readStatus(c)
	c.conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.UnixMilli(mark.Ctime); !st2.changed.Equal(want) {
		t.Errorf("status dates the group's last change %v, want the drain mark's creation, %v", st2.changed, want)
	}

	// A record over a member that is gone, seatless: not computed for the
	// members read.
	h := newDrainGroup(t, srv, "lagging")
	h.member("a", sticky(1))
	h.record([]rebalance.Member{{Name: "a", Weight: 1}, {Name: "gone", Weight: 1}}, 1, 2)
	code, out, _ = h.run("status", "-check")
	if why := "no hand-off can be told: the assignment record (generation 1) gives partitions to gone, which is neither a live member nor a seat"; code != exitProblem || !strings.Contains(out, why) {
		t.Errorf("status -check with a lagging record: exit %d, want %d and %q:\n%s", code, exitProblem, why, out)
	}
	code, out, _ = h.run("status")
	if code != 0 || !strings.Contains(out, "hand-offs in progress: unknown") || !strings.Contains(out, "(hand-offs unknown: the assignment record (generation 1) gives partitions to gone") {
		t.Errorf("status with a lagging record: exit %d:\n%s", code, out)
	}
}
