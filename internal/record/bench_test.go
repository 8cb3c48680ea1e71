package record_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/record"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// BenchmarkAssign times one Assign at 1,000 members (names of 25 bytes)
// and 100,000 partitions (10 topics), against the shared real server:
//
//   - compute/warm: the member that wrote the record before computes the
//     next (one member leaves, or comes back): Sticky, Encode, one multi
//     with the new shares and the head; nothing to read, nothing to
//     decode. After Assign returns, the runner reads the head again with
//     a watch, deletes the old shares and lists the orphans: requests/op
//     counts those too (the next Assign waits for them).
//   - compute/cold: a member that has nothing cached computes the next:
//     the same, plus reading the 1,000 shares (pipelined) and decoding
//     the record.
//   - read/share: a member with nothing cached finds the record for its
//     views: the head and its own share.
//   - read/again: a member asks again for the record it found for its
//     views, its head's watch not fired: nothing to read. (After a
//     write that leaves its share node as it was, it reads the head
//     alone: one request, about 0.2 ms.)
//
// requests/op counts the runner's ZooKeeper requests.
func BenchmarkAssign(b *testing.B) {
	paths := groupOf(b)
	all := names(1000)
	parts := partsOf(10, 10_000)
	sess := zksession.New(actortest.SessionConfig(zksession.Config{Servers: []string{record.Server(b)}}))
	probe := sess.Subscribe()
	actortest.Run(b, "session", sess.Run)
	var st zksession.State
	actortest.Await(b, probe, &st, within, "session up", actortest.IsUp)

	noStagger := func(name string, sub *actor.Latest[zksession.State]) *record.Runner {
		return record.New(record.Config{Paths: paths, Member: name, Session: sub, Step: time.Nanosecond})
	}
	// runnerFor returns a runner with nothing cached, on st.
	var requests atomic.Int64
	runnerFor := func(name string) *record.Runner {
		sub := actor.NewLatest[zksession.State]()
		c := st
		c.Conn = countingConn{st.Conn, &requests, nil}
		sub.Set(c)
		return noStagger(name, sub)
	}
	writer := runnerFor(all[0])
	zxid := int64(1)
	leaver := all[500]
	// next is the job of the next views: every member, or all but
	// leaver, in turn.
	next := func() decision.Job {
		zxid++
		if zxid%2 == 0 {
			return jobOf(zxid, 1, all, parts)
		}
		live := make([]string, 0, len(all)-1)
		for _, n := range all {
			if n != leaver {
				live = append(live, n)
			}
		}
		return jobOf(zxid, 1, live, parts)
	}
	assign := func(b *testing.B, r *record.Runner, job decision.Job) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		if _, err := r.Assign(ctx, job); err != nil {
			b.Fatal(err)
		}
	}
	job := next()
	assign(b, writer, job)

	b.Run("compute/warm", func(b *testing.B) {
		requests.Store(0)
		for b.Loop() {
			job = next()
			assign(b, writer, job)
		}
		b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
	})
	b.Run("compute/cold", func(b *testing.B) {
		requests.Store(0)
		for b.Loop() {
			job = next()
			assign(b, runnerFor(all[1]), job)
		}
		b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
	})
	b.Run("read/share", func(b *testing.B) {
		requests.Store(0)
		for b.Loop() {
			assign(b, runnerFor(all[2]), job)
		}
		b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
	})
	b.Run("read/again", func(b *testing.B) {
		r := runnerFor(all[3])
		assign(b, r, job)
		requests.Store(0)
		for b.Loop() {
			assign(b, r, job)
		}
		b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
	})
}
