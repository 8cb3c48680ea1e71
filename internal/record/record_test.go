package record_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestSameJobOneWrite gives three members, each with its own session,
// the same job at once: each returns its share of the one record
// written, and one write happened. Then a member leaves: the two left
// keep everything they had and share the leaver's partitions.
func TestSameJobOneWrite(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c"}
	ms := []*member{startMember(t, paths, "a", nil), startMember(t, paths, "b", nil), startMember(t, paths, "c", nil)}
	parts := partsOf(3, 10)
	obs := observe(t)

	job1 := jobOf(100, 200, all, parts)
	want1 := sticky(t, balanced(t, job1), job1)
	res := assignAll(job1, within, ms...)
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", all[i], r.err)
		}
		if want := want1.Of(all[i]); !slices.Equal(r.parts, want) {
			t.Errorf("%s got %v, want %v", all[i], r.parts, want)
		}
	}
	rec := readRecord(t, obs, paths)
	if c := sumCounts(ms...); c.Writes != 1 || rec.stat.Version != 0 {
		t.Errorf("after the first job: %d writes (%d failed CAS), head version %d; want 1 write, version 0", c.Writes, c.FailedCAS, rec.stat.Version)
	}
	if rec.head.MembersZxid != 100 || rec.head.PartitionsZxid != 200 || rec.head.Generation != 1 {
		t.Errorf("head: generation %d for (%d, %d), want 1 for (100, 200)", rec.head.Generation, rec.head.MembersZxid, rec.head.PartitionsZxid)
	}

	// c leaves.
	job2 := jobOf(101, 200, all[:2], parts)
	res2 := assignAll(job2, within, ms[:2]...)
	var union []rebalance.Partition
	for i, r := range res2 {
		if r.err != nil {
			t.Fatalf("%s: %v", all[i], r.err)
		}
		for _, p := range res[i].parts {
			if !slices.Contains(r.parts, p) {
				t.Errorf("%s lost %s, which it had, when c left", all[i], p)
			}
		}
		union = append(union, r.parts...)
	}
	rebalance.Sort(union)
	if !slices.Equal(union, parts) {
		t.Errorf("after c left, a and b hold %v, want every partition once", union)
	}
	awaitAfter(ms...) // the old nodes go after Assign returns
	rec = readRecord(t, obs, paths)
	if c := sumCounts(ms...); c.Writes != 2 || rec.stat.Version != 1 {
		t.Errorf("after the second job: %d writes (%d failed CAS), head version %d; want 2 writes, version 1", c.Writes, c.FailedCAS, rec.stat.Version)
	}
	if want := named(rec.head); !slices.Equal(rec.children, want) {
		t.Errorf("share nodes %v, want only those the head names, %v", rec.children, want)
	}
}

// TestDeadWriter leaves the member that computes first out: the next one
// in the order writes the record a step later.
func TestDeadWriter(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c"}
	job := jobOf(7, 9, all, partsOf(1, 12))
	var first, second string
	for _, n := range all {
		switch record.Rank(all, n, 7, 9) {
		case 0:
			first = n
		case 1:
			second = n
		}
	}
	m := startMember(t, paths, second, nil)
	start := time.Now()
	got := m.assign(t, job) // first never calls Assign
	took := time.Since(start)
	if want := sticky(t, balanced(t, job), job).Of(second); !slices.Equal(got, want) {
		t.Errorf("%s got %v, want %v", second, got, want)
	}
	if c := m.r.Counts(); c.Writes != 1 {
		t.Errorf("%s wrote %d records, want 1 (%s, first, never ran)", second, c.Writes, first)
	}
	if took < record.DefaultStep {
		t.Errorf("%s, ranked second, wrote after %v, before its step %v", second, took, record.DefaultStep)
	}
}

// TestWriterGoesOn: the member that wrote the record computes the next
// at once, even when it ranks last for the new views; the others, a
// step (made long here) behind it, find its record.
func TestWriterGoesOn(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c"}
	parts := partsOf(2, 12)
	long := func(c *record.Config) { c.Step = 5 * time.Second }
	ms := []*member{startMember(t, paths, "a", long), startMember(t, paths, "b", long), startMember(t, paths, "c", long)}
	for i, r := range assignAll(jobOf(1, 1, all, parts), within, ms...) {
		if r.err != nil {
			t.Fatalf("%s: %v", all[i], r.err)
		}
	}
	var w *member
	for _, m := range ms {
		if m.r.Counts().Writes == 1 {
			w = m
		}
	}
	if c := sumCounts(ms...); w == nil || c.Writes != 1 || c.FailedCAS != 0 {
		t.Fatalf("the first record: %+v in all, want 1 write and no failed one", c)
	}
	z := int64(2)
	for record.Rank(all, w.name, z, 1) != len(all)-1 {
		z++
	}
	for i, r := range assignAll(jobOf(z, 1, all, parts), within, ms...) {
		if r.err != nil {
			t.Fatalf("%s: %v", all[i], r.err)
		}
	}
	if c := sumCounts(ms...); w.r.Counts().Writes != 2 || c.Writes != 2 || c.FailedCAS != 0 {
		t.Errorf("%s wrote %d records of 2 (in all %+v); want it to write the second too, ranked last but holding the record", w.name, w.r.Counts().Writes, c)
	}
}

// TestHeadReadOnceAWrite: a member reads the head only when its watch
// fired. The writer that goes on computes the next record at once from
// the head it wrote, its watch armed again after its write, off the
// path of that Assign; a member that waits for another's write reads
// nothing until it comes; then it reads the head once, and its share
// only if its node changed. (Before, each Assign began with a read of
// the head: one request more for every member on every change, and a
// round trip more before the writer's write.)
func TestHeadReadOnceAWrite(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b"}
	parts := partsOf(2, 10)
	long := func(c *record.Config) { c.Step = time.Hour }
	ms := map[string]*member{"a": startMember(t, paths, "a", long), "b": startMember(t, paths, "b", long)}
	job1 := jobOf(1, 1, all, parts)
	w, o := ms["a"], ms["b"] // w ranks first for job1's views, and writes at once
	if record.Rank(all, "b", 1, 1) == 0 {
		w, o = o, w
	}
	w.assign(t, job1)
	o.assign(t, job1)
	record.AwaitAfter(w.r)
	w.ops.take()
	o.ops.take()
	head := paths.Assignment()
	job2 := jobOf(2, 1, all, parts)
	want := sticky(t, readRecord(t, observe(t), paths).placement, job2)

	// o's views move first: w wrote the head, so o waits for w's next
	// write, and reads nothing meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := o.r.Assign(ctx, job2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s, waiting for %s's record: %v; want to wait until ctx ends", o.name, w.name, err)
	}
	if ops := o.ops.take(); len(ops) != 0 {
		t.Errorf("%s, waiting for %s's record under its head's watch, sent %q; want nothing", o.name, w.name, ops)
	}

	if got := w.assign(t, job2); !slices.Equal(got, want.Of(w.name)) {
		t.Errorf("%s got %v, want %v", w.name, got, want.Of(w.name))
	}
	if ops := w.ops.take(); len(ops) == 0 || ops[0] != "multi "+head {
		t.Errorf("%s, computing over the head it wrote, sent %q; want first the write (multi %s)", w.name, ops, head)
	}
	if got := o.assign(t, job2); !slices.Equal(got, want.Of(o.name)) {
		t.Errorf("%s got %v after %s's write, want %v", o.name, got, w.name, want.Of(o.name))
	}
	if ops := o.ops.take(); !slices.Equal(ops, []string{"getw " + head}) {
		t.Errorf("%s, after a write that leaves its share as it was, sent %q; want [getw %s]", o.name, ops, head)
	}
}

// TestOlderViewsWait: a member whose views are older than the head's in
// either zxid waits for the head to change, and returns ctx's error when
// ctx ends, writing nothing.
func TestOlderViewsWait(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	parts := partsOf(1, 6)
	a := startMember(t, paths, "a", nil)
	a.assign(t, jobOf(10, 10, []string{"a"}, parts))
	obs := observe(t)
	before := readRecord(t, obs, paths)
	for _, views := range [][2]int64{{9, 10}, {10, 9}, {9, 9}, {11, 9}, {9, 11}} {
		for _, m := range []*member{a, startMember(t, paths, "b", nil)} {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			got, err := m.r.Assign(ctx, jobOf(views[0], views[1], []string{"a", "b"}, parts))
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s, views %v against a head for (10, 10): got %v, %v; want to wait until ctx ends", m.name, views, got, err)
			}
		}
	}
	if after := readRecord(t, obs, paths); after.stat.Version != before.stat.Version {
		t.Errorf("a member with older views wrote: head version %d, was %d", after.stat.Version, before.stat.Version)
	}
}

// TestBootstrapFromBalanced: with no record, the first starts from what
// rebalance.Balanced gives the same views, and so moves nothing.
func TestBootstrapFromBalanced(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c", "d"}
	parts := partsOf(3, 17)
	job := jobOf(5, 6, all, parts)
	want, err := rebalance.Balanced.Assign(all, parts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		m := startMember(t, paths, n, nil)
		got := m.assign(t, job)
		w := slices.Clone(want[n])
		rebalance.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s got %v, want Balanced's %v", n, got, w)
		}
	}
}

// TestRace has two members with different newer views compute at once
// (no stagger): the one with the newest views ends with the record for
// them, computed from whichever record was there; the other returned its
// share of a record for its own views, or waited until its ctx ended.
func TestRace(t *testing.T) {
	t.Parallel()
	parts := partsOf(2, 15)
	all := []string{"a", "b", "c"}
	job0 := jobOf(1, 1, all, parts)
	jobA := jobOf(2, 1, all, parts) // c's weight goes to 3
	jobA.Weights = []int{1, 1, 3}
	jobB := jobOf(3, 1, all[:2], parts) // c leaves
	wins := map[bool]int{}
	for round := range 4 {
		t.Run("round", func(t *testing.T) {
			paths := groupOf(t)
			noStagger := func(c *record.Config) { c.Step = time.Nanosecond }
			a, b := startMember(t, paths, "a", noStagger), startMember(t, paths, "b", noStagger)
			// The member that wrote the record before has it decoded, and
			// is likely to write first: take turns.
			if round%2 == 0 {
				a.assign(t, job0)
			} else {
				b.assign(t, job0)
			}
			obs := observe(t)
			rec0 := readRecord(t, obs, paths)

			var resA, resB result
			done := make(chan struct{})
			go func() {
				defer close(done)
				resA = assignAll(jobA, time.Second, a)[0]
			}()
			resB = assignAll(jobB, within, b)[0]
			<-done

			if resB.err != nil {
				t.Fatalf("b, with the newest views: %v", resB.err)
			}
			prevB := rec0.placement
			switch {
			case resA.err == nil:
				wantA := sticky(t, rec0.placement, jobA)
				if w := wantA.Of("a"); !slices.Equal(resA.parts, w) {
					t.Errorf("a got %v, want %v", resA.parts, w)
				}
				prevB = wantA.Next
			case !errors.Is(resA.err, context.DeadlineExceeded):
				t.Fatalf("a: %v, want a share or to wait until ctx ends", resA.err)
			}
			wins[resA.err == nil]++
			awaitAfter(a, b) // the old nodes go after Assign returns
			rec := readRecord(t, obs, paths)
			if rec.head.MembersZxid != 3 || rec.head.PartitionsZxid != 1 {
				t.Fatalf("the record is for (%d, %d), want b's views (3, 1)", rec.head.MembersZxid, rec.head.PartitionsZxid)
			}
			wantB := sticky(t, prevB, jobB)
			if !reflect.DeepEqual(rec.placement.Owners(), wantB.Next.Owners()) || !reflect.DeepEqual(rec.placement.Homes(), wantB.Next.Homes()) {
				t.Errorf("the record holds %v, want %v (a wrote: %v)", rec.placement.Owners(), wantB.Next.Owners(), resA.err == nil)
			}
			if w := wantB.Of("b"); !slices.Equal(resB.parts, w) {
				t.Errorf("b got %v, want %v", resB.parts, w)
			}
			if want := named(rec.head); !slices.Equal(rec.children, want) {
				t.Errorf("share nodes %v, want only those the head names, %v", rec.children, want)
			}
			c := sumCounts(a, b)
			t.Logf("a wrote: %v; writes %d, failed CAS %d", resA.err == nil, c.Writes, c.FailedCAS)
		})
	}
	t.Logf("rounds in which a wrote first: %d, b: %d", wins[true], wins[false])
}

// TestAssignEndsWhileTheLastWriteCleansUp: the work a write leaves (the
// head's watch, the old nodes' deletes, the orphans' listing) runs after
// Assign returns; the next Assign waits for it, but no longer than its
// context, and the call after it takes it. (Held here at the listing:
// requests held while the connection is down, as a real one might be.)
func TestAssignEndsWhileTheLastWriteCleansUp(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	a := startMember(t, paths, "a", nil)
	parts := partsOf(1, 6)
	a.assign(t, jobOf(1, 1, []string{"a"}, parts))
	record.AwaitAfter(a.r)
	gate := make(chan struct{})
	a.gate.Store(&gate)
	a.assign(t, jobOf(2, 1, []string{"a"}, parts)) // returns, its cleanup held
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := a.r.Assign(ctx, jobOf(3, 1, []string{"a"}, parts))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Assign while the last write's cleanup is held: %v, want ctx's error", err)
	}
	close(gate)
	a.gate.Store(nil)
	if got := a.assign(t, jobOf(3, 1, []string{"a"}, parts)); !slices.Equal(got, parts) {
		t.Errorf("once the cleanup is done: %v, want %v", got, parts)
	}
}
