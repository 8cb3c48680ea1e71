package record_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/assignment"
	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/rebalance"
)

// TestSplitAndOrphans writes records too large for one multi (the
// limit made tiny): the first, over no head, creates the head empty,
// then the shares, then sets the head; the next deletes the nodes no
// head names, old or not shares, and keeps a later generation's.
func TestSplitAndOrphans(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	a := startMember(t, paths, "a", nil)
	record.SetMultiBytes(a.r, 300) // one share per multi, and the head alone
	b := startMember(t, paths, "b", nil)
	obs := observe(t)
	all := []string{"a", "b", "c"}
	parts := partsOf(2, 40)

	job1 := jobOf(1, 1, all, parts)
	want1 := sticky(t, balanced(t, job1), job1)
	if got := a.assign(t, job1); !slices.Equal(got, want1.Of("a")) {
		t.Errorf("a got %v, want %v", got, want1.Of("a"))
	}
	rec := readRecord(t, obs, paths)
	if rec.stat.Version != 1 { // created empty, then set
		t.Errorf("head version %d after the split path's first record, want 1", rec.stat.Version)
	}
	if want := named(rec.head); !slices.Equal(rec.children, want) || len(want) != 3 {
		t.Errorf("share nodes %v, want the 3 the head names, %v", rec.children, want)
	}
	if got := b.assign(t, job1); !slices.Equal(got, want1.Of("b")) {
		t.Errorf("b got %v, want %v", got, want1.Of("b"))
	}

	// Strays: a node of generation 1 no head names, a child that is not
	// a share, and a node of a later generation, which a writer may be
	// creating now.
	later := assignment.NodeName(rec.head.Generation+5, 1)
	for _, n := range []string{assignment.NodeName(1, 0x0123456789abcdef), "junk", later} {
		if _, err := obs.Create(paths.Share(n), []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	job2 := jobOf(2, 1, all[:2], parts)
	want2 := sticky(t, rec.placement, job2)
	if got := a.assign(t, job2); !slices.Equal(got, want2.Of("a")) {
		t.Errorf("a got %v, want %v", got, want2.Of("a"))
	}
	awaitAfter(a) // the orphans go after Assign returns
	rec = readRecord(t, obs, paths)
	want := append(named(rec.head), later)
	slices.Sort(want)
	if rec.stat.Version != 2 || !slices.Equal(rec.children, want) {
		t.Errorf("head version %d, share nodes %v; want version 2, and %v (those named and the later one)", rec.stat.Version, rec.children, want)
	}
	if got := b.assign(t, job2); !slices.Equal(got, want2.Of("b")) {
		t.Errorf("b got %v, want %v", got, want2.Of("b"))
	}
}

// TestDeadSplitWriter: a writer died after creating the next record's
// shares in the split path, before its head. The next writer's one
// multi fails on a share that exists; it falls back to the split path
// and writes.
func TestDeadSplitWriter(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c"}
	parts := partsOf(1, 30)
	a := startMember(t, paths, "a", nil)
	a.assign(t, jobOf(1, 1, all, parts))
	obs := observe(t)
	rec := readRecord(t, obs, paths)

	job2 := jobOf(2, 1, all[:2], parts)
	next := sticky(t, rec.placement, job2)
	ms := []rebalance.Member{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}
	enc, err := assignment.Encode(assignment.Input{MembersZxid: 2, PartitionsZxid: 1, Members: ms, Placement: next.Next}, rec.head)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc.Create) == 0 {
		t.Fatal("the next record creates no share: nothing to test")
	}
	for _, n := range enc.Create {
		if _, err := obs.Create(paths.Share(n.Name), n.Data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	b := startMember(t, paths, "b", nil)
	if got := b.assign(t, job2); !slices.Equal(got, next.Of("b")) {
		t.Errorf("b got %v, want %v", got, next.Of("b"))
	}
	awaitAfter(b) // the old nodes go after Assign returns
	after := readRecord(t, obs, paths)
	if after.stat.Version != rec.stat.Version+1 || after.head.MembersZxid != 2 {
		t.Errorf("head version %d for members zxid %d, want %d for 2", after.stat.Version, after.head.MembersZxid, rec.stat.Version+1)
	}
	if want := named(after.head); !slices.Equal(after.children, want) {
		t.Errorf("share nodes %v, want %v", after.children, want)
	}
}

// TestShareCache: a member whose share node did not change reads the
// head and nothing else.
func TestShareCache(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	all := []string{"a", "b", "c"}
	parts := partsOf(2, 20)
	ms := []*member{startMember(t, paths, "a", nil), startMember(t, paths, "b", nil), startMember(t, paths, "c", nil)}
	res := assignAll(jobOf(1, 1, all, parts), within, ms...)
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", all[i], r.err)
		}
	}
	// New views with the same members and partitions: b writes a record
	// in which nobody's share changed.
	job2 := jobOf(2, 2, all, parts)
	awaitAfter(ms...) // the first writer's requests after its Assign are not counted below
	ms[1].assign(t, job2)
	awaitAfter(ms[1])
	for _, i := range []int{0, 2} {
		before := ms[i].requests.Load()
		got := ms[i].assign(t, job2)
		if n := ms[i].requests.Load() - before; n != 1 {
			t.Errorf("%s sent %d requests, want 1 (the head)", all[i], n)
		}
		if !slices.Equal(got, res[i].parts) {
			t.Errorf("%s got %v, want what it had, %v", all[i], got, res[i].parts)
		}
		if n := record.CachedShares(ms[i].r); n > 1 && ms[i].r.Counts().Writes == 0 {
			t.Errorf("%s, which wrote no record, caches %d shares; want at most its own", all[i], n)
		}
	}
}

// TestAllDrained: with every member drained, Sticky's error is returned,
// and nothing is written.
func TestAllDrained(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	a := startMember(t, paths, "a", nil)
	job := jobOf(1, 1, []string{"a", "b"}, partsOf(1, 4))
	job.Drained = []string{"a", "b"}
	_, err := a.r.Assign(t.Context(), job)
	if !errors.Is(err, rebalance.ErrNoMembers) {
		t.Errorf("Assign with every member drained: %v, want ErrNoMembers", err)
	}
	if ok, _, err := observe(t).Exists(paths.Assignment()); err != nil || ok {
		t.Errorf("a record was written (%v, %v)", ok, err)
	}
}

// TestBrokenRecord: a head that cannot be decoded counts as no record:
// the next record starts over from Balanced and is written over it with
// the compare-and-set; so does a record whose share node is missing
// under an unchanged head, and its nodes go as orphans.
func TestBrokenRecord(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	obs := observe(t)
	all := []string{"a", "b"}
	parts := partsOf(1, 10)
	if err := zkpath.Ensure(obs, paths.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(paths.Assignment(), []byte("zkalloc-assignment 1\nwhat\n"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	a := startMember(t, paths, "a", nil)
	job1 := jobOf(1, 1, all, parts)
	want1 := sticky(t, balanced(t, job1), job1)
	if got := a.assign(t, job1); !slices.Equal(got, want1.Of("a")) {
		t.Errorf("over an undecodable head, a got %v, want %v", got, want1.Of("a"))
	}
	rec := readRecord(t, obs, paths)
	if rec.stat.Version != 1 || rec.head.Generation != 1 {
		t.Errorf("head version %d, generation %d; want 1 and 1 (written over)", rec.stat.Version, rec.head.Generation)
	}

	// b's share node goes missing: a member with nothing cached that
	// computes the next record starts over.
	e, _ := rec.head.Of("b")
	if err := obs.Delete(paths.Share(e.Node), -1); err != nil {
		t.Fatal(err)
	}
	b := startMember(t, paths, "b", nil)
	job2 := jobOf(2, 1, all, parts)
	want2 := sticky(t, balanced(t, job2), job2)
	if got := b.assign(t, job2); !slices.Equal(got, want2.Of("b")) {
		t.Errorf("over a record missing a share, b got %v, want %v", got, want2.Of("b"))
	}
	awaitAfter(b) // the orphans go after Assign returns
	rec = readRecord(t, obs, paths)
	if rec.head.Generation != 2 || !slices.Equal(rec.children, named(rec.head)) {
		t.Errorf("generation %d, share nodes %v; want 2, and only %v", rec.head.Generation, rec.children, named(rec.head))
	}
}

// TestNewerFormatHead: a head of a later format, as a newer version
// writes it, is neither read nor written over: the member waits, and
// writes nothing, until a head it can read (here none: the newer
// version's head deleted) replaces it. (Before, it wrote over it as a
// broken record, so that in a rolling upgrade the two versions would
// write over each other's records.)
func TestNewerFormatHead(t *testing.T) {
	t.Parallel()
	paths := groupOf(t)
	obs := observe(t)
	if err := zkpath.Ensure(obs, paths.Dir()); err != nil {
		t.Fatal(err)
	}
	newer := []byte("zkalloc-assignment 2\nwhat a later version holds\n")
	if _, err := obs.Create(paths.Assignment(), newer, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	a := startMember(t, paths, "a", nil)
	job := jobOf(1, 1, []string{"a"}, partsOf(1, 6))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := a.r.Assign(ctx, job)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("over a head of a newer format: %v, want to wait until ctx ends", err)
	}
	data, stat, err := obs.Get(paths.Assignment())
	if err != nil || string(data) != string(newer) || stat.Version != 0 || a.r.Counts().Writes != 0 {
		t.Fatalf("the newer head: %q, version %v, %v; a wrote %d records; want it untouched", data, stat, err, a.r.Counts().Writes)
	}

	done := make(chan result, 1)
	go func() {
		parts, err := a.r.Assign(context.Background(), job)
		done <- result{parts: parts, err: err}
	}()
	if err := obs.Delete(paths.Assignment(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err != nil || !slices.Equal(res.parts, job.Partitions) {
			t.Errorf("once the newer head went: %v, %v; want every partition", res.parts, res.err)
		}
	case <-time.After(within):
		t.Fatal("a still waits after the newer head went")
	}
}
