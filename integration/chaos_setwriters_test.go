package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/partitions"
)

// The fault set-writers races several writers of the partition set on one
// topic, chaosWriterTopic, which they empty completely and fill again
// (issue 24, item 5): a member through the public API (AddPartitions,
// RemovePartitions) and three of the zkalloc command's writers
// (partset.Change, on connections of their own), two of which pause
// between reading a topic and writing it (see slowWriter). (More writers
// that do not pause found fewer lost writes: their retries under
// contention stretch each write over many others', and a read then has
// more writes that may explain it.) Every
// write is recorded (history.SetWrite), and so is a read of the topic
// that each writer makes after each of its writes, up to date (a sync,
// then a read); the whole set is read before and after the fault. The
// checker's (d) requires every read to show, for each partition, what a
// possible last write before it set, in some linearizable order of the
// writes: 0 lost set writes. (A read at the end alone would miss most:
// the writes that follow a lost one hide it.) The test's expected set
// then follows the set as read. The nemesis also counts the
// compare-and-sets it saw applied to a node deleted and created again
// since it was read (each overwrites an acknowledged write, whatever the
// reads show): there must be none.

const (
	chaosWriterTopic  = "w"
	chaosWriterIDs    = 4                     // the topic's IDs are 0..chaosWriterIDs-1
	chaosWriterAPI    = 1                     // writers through members' AddPartitions and RemovePartitions
	chaosWriterCLI    = 3                     // writers through partset.Change, the last two slowWriters
	chaosWriterTime   = 2 * time.Second       // each writer writes for this long
	chaosWriterThink  = 20 * time.Millisecond // the most a writer waits between two writes
	chaosWriterPause  = 400 * time.Millisecond
	chaosWriterBudget = time.Minute // bounds each write
)

// slowWriter is a zkalloc command's connection whose process pauses
// between reading a topic and writing it, for up to chaosWriterPause: a
// nemesis that resumes it at the worst moment it sees within that time,
// as soon as the topic node it read has been deleted and created again
// at the version it read (issue 24's sequence: W1 reads T at version 0,
// W2 empties T, which deletes it, W3 creates it again at version 0, W1's
// compare-and-set on version 0 succeeds), or else at the end of a random
// pause.
type slowWriter struct {
	*zk.Conn
	mu   sync.Mutex // the writer reads topics from several goroutines
	rng  *rand.Rand
	read map[string]*zk.Stat // the node each path was last read as
	// stale counts the compare-and-sets applied to a node deleted and
	// created again since it was read: the lost writes of issue 24.
	stale *atomic.Int64
}

var _ partset.Conn = (*slowWriter)(nil)

func (w *slowWriter) Get(path string) ([]byte, *zk.Stat, error) {
	data, stat, err := w.Conn.Get(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.read[path] = stat
	} else {
		delete(w.read, path)
	}
	return data, stat, err
}

func (w *slowWriter) Multi(ops ...any) ([]zk.MultiResponse, error) {
	w.mu.Lock()
	d := chaosWriterPause/4 + time.Duration(w.rng.Int64N(int64(chaosWriterPause*3/4)))
	type cas struct {
		path    string
		version int32
		czxid   int64
	}
	var stale []cas
	for _, op := range ops {
		var path string
		var version int32
		switch op := op.(type) {
		case *zk.SetDataRequest:
			path, version = op.Path, op.Version
		case *zk.DeleteRequest:
			path, version = op.Path, op.Version
		default:
			continue
		}
		if st, ok := w.read[path]; ok {
			stale = append(stale, cas{path, version, st.Czxid})
		}
	}
	w.mu.Unlock()
	// The pause is the fault itself; polling the node is the nemesis
	// looking for the worst moment to end it.
	recreated := false
	for end := time.Now().Add(d); time.Now().Before(end) && !recreated; time.Sleep(2 * time.Millisecond) {
		recreated = slices.ContainsFunc(stale, func(c cas) bool {
			_, st, err := w.Conn.Exists(c.path)
			return err == nil && st != nil && st.Czxid != c.czxid && st.Version == c.version
		})
	}
	res, err := w.Conn.Multi(ops...)
	if recreated && err == nil {
		w.stale.Add(1)
	}
	return res, err
}

// setWriter is one writer of a set-writers fault.
type setWriter struct {
	name  string
	write func(ctx context.Context, remove bool, ids []int32) error
	conn  *zk.Conn // to read the topic with after each write
}

// setWriters runs one set-writers fault.
func (c *chaos) setWriters() {
	paths := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}
	var writers []setWriter
	var stale atomic.Int64
	live := c.live()
	for i := range chaosWriterAPI {
		m := live[c.rng.IntN(len(live))]
		m.mu.Lock()
		alloc := m.alloc
		m.mu.Unlock()
		writers = append(writers, setWriter{name: fmt.Sprintf("api%d-%s", i, m.name), conn: c.obs, write: func(ctx context.Context, remove bool, ids []int32) error {
			change := map[string][]int32{chaosWriterTopic: ids}
			if remove {
				return alloc.RemovePartitions(ctx, change)
			}
			return alloc.AddPartitions(ctx, change)
		}})
	}
	for i := range chaosWriterCLI {
		conn, _, err := zk.Connect(c.ens.Addrs(), chaosTimeout, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
		if err != nil {
			c.t.Fatal(err)
		}
		defer conn.Close()
		var pc partset.Conn = conn
		if i >= chaosWriterCLI-2 {
			pc = &slowWriter{Conn: conn, rng: rand.New(rand.NewPCG(c.seed, 0x5107+uint64(i))), read: map[string]*zk.Stat{}, stale: &stale}
		}
		writers = append(writers, setWriter{name: fmt.Sprintf("cli%d", i), conn: conn, write: func(_ context.Context, remove bool, ids []int32) error {
			return partset.Change(pc, paths, remove, map[string][]int32{chaosWriterTopic: ids})
		}})
	}
	c.readSet("set-writers: before")
	var wg sync.WaitGroup
	until := time.Now().Add(chaosWriterTime)
	for _, w := range writers {
		// Each writer's choices come from the seed, drawn here.
		r := rand.New(rand.NewPCG(c.seed, c.rng.Uint64()))
		wg.Go(func() { c.runSetWriter(w, r, until) })
	}
	wg.Wait()
	c.readSet("set-writers: after")
	c.staleWrites.Add(stale.Load())
	c.t.Logf("set-writers: %d writes so far; %d compare-and-sets applied to a topic node deleted and created again since its read", c.setWrites.Load(), stale.Load())
}

// runSetWriter writes until until, recording each write.
func (c *chaos) runSetWriter(w setWriter, r *rand.Rand, until time.Time) {
	all := ids(chaosWriterIDs)
	for time.Now().Before(until) {
		time.Sleep(time.Duration(r.Int64N(int64(chaosWriterThink)))) // the writer's pace, part of the fault
		var remove bool
		var pick []int32
		// Mostly emptying and refilling: a topic node is then often just
		// created, at version 0, as a stale compare-and-set expects.
		switch n := r.IntN(20); {
		case n < 7: // empty the topic
			remove, pick = true, all
		case n < 14: // refill it with one
			remove, pick = false, randomIDs(r, all, 1)
		case n < 17: // or more
			remove, pick = false, randomIDs(r, all, 2+r.IntN(len(all)-1))
		default: // remove one
			remove, pick = true, randomIDs(r, all, 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), chaosWriterBudget)
		invoked := time.Now()
		err := w.write(ctx, remove, pick)
		returned := time.Now()
		cancel()
		res := history.WriteOK
		switch {
		case errors.Is(err, partset.ErrContended):
			res = history.WriteFailed // every compare-and-set failed: nothing written
		case err != nil:
			res = history.WriteUnknown
			c.t.Logf("set writer %s: %v", w.name, err)
		}
		var ps []zkalloc.Partition
		for _, id := range pick {
			ps = append(ps, zkalloc.Partition{Topic: chaosWriterTopic, ID: id})
		}
		c.rec.SetWrite(history.SetWrite{Writer: w.name, Remove: remove, Partitions: ps, Invoked: invoked, Returned: returned, Result: res})
		c.setWrites.Add(1)
		c.readTopic(w)
	}
}

// readTopic reads chaosWriterTopic, up to date (a sync first), and
// records the read.
func (c *chaos) readTopic(w setWriter) {
	path := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}.Topic(chaosWriterTopic)
	invoked := time.Now()
	if _, err := w.conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return // not up to date: no read to check
	}
	data, _, err := w.conn.Get(path)
	returned := time.Now()
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return
	}
	ids, err := partitions.DecodeIDs(data)
	if err != nil {
		c.t.Errorf("topic %s holds %q: %v", path, data, err)
		return
	}
	var set []zkalloc.Partition
	for _, id := range ids {
		set = append(set, zkalloc.Partition{Topic: chaosWriterTopic, ID: id})
	}
	c.rec.SetRead(history.SetRead{Reader: w.name, Invoked: invoked, Returned: returned, Topic: chaosWriterTopic, Set: set})
}

func randomIDs(r *rand.Rand, all []int32, n int) []int32 {
	perm := r.Perm(len(all))
	out := make([]int32, 0, n)
	for _, i := range perm[:n] {
		out = append(out, all[i])
	}
	slices.Sort(out)
	return out
}

// readSet reads the partition set, up to date (a sync first), records the
// read, and makes it the expected set. No write may be under way.
func (c *chaos) readSet(why string) {
	paths := zkpath.Group{Root: zkalloc.DefaultRoot, Group: c.group}
	invoked := time.Now()
	if _, err := c.obs.Sync(paths.Partitions()); err != nil {
		c.t.Fatalf("%s: sync: %v", why, err)
	}
	topics, corrupt, err := partset.Read(c.obs, paths)
	if err != nil || len(corrupt) > 0 {
		c.t.Fatalf("%s: read the set: %v, corrupt %v", why, err, corrupt)
	}
	set := map[zkalloc.Partition]bool{}
	for topic, ids := range topics {
		for _, id := range ids {
			set[zkalloc.Partition{Topic: topic, ID: id}] = true
		}
	}
	returned := time.Now()
	c.set = set
	want := c.expected()
	c.rec.SetRead(history.SetRead{Reader: "test (" + why + ")", Invoked: invoked, Returned: returned, Set: want})
	c.rec.Expect(want)
}
