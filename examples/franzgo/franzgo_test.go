package franzgo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/examples/franzgo"
	"github.com/zkalloc/zkalloc/zkserver"
)

const (
	topic      = "events"
	numParts   = 32
	kafkaGroup = "billing"
)

// TestExactlyOnce runs 32 partitions over four members at a time while a
// producer writes numbered records, and members join, close gracefully,
// crash, and pause past their session (a zombie that the fencing token
// stops). "Processed" means accepted by the sink; every record produced
// must be accepted exactly once, in offset order per partition. Redelivered
// records (re-read after a crash from the last commit) and fenced writes
// (the zombie's) are refused by the sink and counted, not processed.
func TestExactlyOnce(t *testing.T) {
	zkAddr := zkserver.Start(t).Servers()[0]
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(numParts, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	h := &harness{t: t, zk: zkAddr, brokers: kf.ListenAddrs(), sink: &franzgo.MemSink{}, start: time.Now()}
	defer h.closeAll()

	prod := h.startProducer()
	for i := 1; i <= 4; i++ {
		h.join(fmt.Sprintf("m%d", i))
	}
	h.converged()
	h.progress()

	h.crash("m1")
	h.converged()
	h.progress()

	h.join("m5")
	h.converged()
	h.progress()

	h.close("m2")
	h.converged()
	h.progress()

	h.join("m6")
	h.converged()
	h.progress()

	h.zombie("m3")
	h.converged()
	h.progress()

	h.join("m7")
	h.converged()
	h.progress()

	produced := prod.stop()
	h.logf("producer stopped after %d records", produced)
	h.waitFor("every record accepted", 30*time.Second, func() (bool, string) {
		got := h.sink.Stats().Accepted
		return got >= produced, fmt.Sprintf("%d of %d accepted", got, produced)
	})
	h.closeAll()

	// Every number once, and per partition in offset order.
	seen := make([]int, produced)
	for id := int32(0); id < numParts; id++ {
		last := -1
		for _, v := range h.sink.Values(zkalloc.Partition{Topic: topic, ID: id}) {
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 0 || n >= produced {
				t.Fatalf("partition %d: value %q not a produced number", id, v)
			}
			if n%numParts != int(id) || n <= last {
				t.Errorf("partition %d: %d after %d", id, n, last)
			}
			last = n
			seen[n]++
		}
	}
	var missing, twice []int
	for n, c := range seen {
		switch {
		case c == 0:
			missing = append(missing, n)
		case c > 1:
			twice = append(twice, n)
		}
	}
	st := h.sink.Stats()
	t.Logf("produced %d; accepted %d; missing %d; accepted twice %d; redelivered and dropped %d; fenced %d; gaps %d",
		produced, st.Accepted, len(missing), len(twice), st.Redelivered, st.Fenced, st.Gaps)
	if len(missing) > 0 || len(twice) > 0 || st.Accepted != produced || st.Gaps > 0 {
		t.Errorf("not exactly once: missing %v, twice %v", head(missing), head(twice))
	}
	if st.Fenced == 0 {
		t.Errorf("the zombie wrote nothing that the sink fenced")
	}

	// The last owners committed everything before acking their final Update.
	adm := kadm.NewClient(h.newClient())
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, kafkaGroup)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed.Lookup(e.Topic, e.Partition)
		if !ok || c.At != e.Offset {
			t.Errorf("%s:%d: committed %d (found %v), end %d", e.Topic, e.Partition, c.At, ok, e.Offset)
		}
	})
}

func head(s []int) []int { return s[:min(len(s), 10)] }

type harness struct {
	t       *testing.T
	zk      string
	brokers []string
	sink    *franzgo.MemSink
	start   time.Time
	members []*member         // live ones
	last    franzgo.SinkStats // at the last step
}

type member struct {
	name   string
	alloc  *zkalloc.Allocator
	client *kgo.Client
	plug   *plug // Pull cuts the member off from ZooKeeper
	sink   *gate
	cancel context.CancelFunc
	ran    chan error    // Run's result
	buried chan struct{} // closed when Updates may be drained
}

func (h *harness) logf(format string, args ...any) {
	h.t.Helper()
	h.t.Logf("%6.2fs "+format, append([]any{time.Since(h.start).Seconds()}, args...)...)
}

func (h *harness) newClient(opts ...kgo.Opt) *kgo.Client {
	h.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(h.brokers...)}, opts...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	return cl
}

func (h *harness) join(name string) {
	h.t.Helper()
	plug := startPlug(h.t, h.zk)
	ids := make([]int32, numParts)
	for i := range ids {
		ids[i] = int32(i)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("member", name)
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers:        []string{plug.Addr()},
		Group:          "franzgo",
		Member:         name,
		Partitions:     map[string][]int32{topic: ids},
		SessionTimeout: 2 * time.Second,
		Logger:         logger,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := alloc.Start(ctx); err != nil {
		plug.Pull()
		h.t.Fatal(err)
	}
	m := &member{
		name:   name,
		alloc:  alloc,
		client: h.newClient(kgo.FetchMaxWait(200 * time.Millisecond)),
		plug:   plug,
		sink:   &gate{Sink: h.sink},
		ran:    make(chan error, 1),
		buried: make(chan struct{}),
	}
	var runCtx context.Context
	runCtx, m.cancel = context.WithCancel(context.Background())
	c := &franzgo.Consumer{Client: m.client, Group: kafkaGroup, Sink: m.sink, CommitInterval: 500 * time.Millisecond, Logger: logger}
	go func() {
		m.ran <- c.Run(runCtx, alloc.Updates())
		// A dead consumer acks nothing. Once the member is cut off from
		// ZooKeeper, this drain spares zkalloc's Close its ReleaseTimeout.
		<-m.buried
		for u := range alloc.Updates() {
			u.Ack()
		}
	}()
	h.members = append(h.members, m)
	h.logf("%s joined", name)
}

func (h *harness) take(name string) *member {
	h.t.Helper()
	for i, m := range h.members {
		if m.name == name {
			h.members = slices.Delete(h.members, i, i+1)
			return m
		}
	}
	h.t.Fatalf("no live member %s", name)
	return nil
}

// close closes a member as a deployment would: zkalloc's Close, whose
// final Update the consumer commits and acks.
func (h *harness) close(name string) {
	h.t.Helper()
	m := h.take(name)
	m.closeGracefully(h.t)
	h.logf("%s closed", name)
}

func (m *member) closeGracefully(t *testing.T) {
	t.Helper()
	closed := make(chan error, 1)
	close(m.buried) // Run reads Updates to the end
	go func() { closed <- m.alloc.Close() }()
	if err := <-m.ran; err != nil {
		t.Errorf("%s: Run: %v", m.name, err)
	}
	if err := <-closed; err != nil {
		t.Errorf("%s: Close: %v", m.name, err)
	}
	m.cancel()
	m.client.Close()
	m.plug.Pull()
}

// crash kills a member: its ZooKeeper connection is reset and its
// consumer stops where it is, committing and acking nothing. The others
// take its partitions once ZooKeeper expires its session.
func (h *harness) crash(name string) {
	h.t.Helper()
	m := h.take(name)
	m.cancel()
	<-m.ran
	m.plug.Pull()
	m.bury()
	h.logf("%s crashed", name)
}

// bury frees what a dead member's process held in this test's process:
// nothing of it reaches ZooKeeper or the sink any more.
func (m *member) bury() {
	close(m.buried)
	m.client.Close()
	m.alloc.Close()
}

// zombie pauses a member's consumer in the middle of a write, as a long
// garbage collection would, past its session's expiry; the others take its
// partitions and write to them; then the paused write goes on, and the
// sink must refuse it by its token.
func (h *harness) zombie(name string) {
	h.t.Helper()
	m := h.take(name)
	p := m.sink.pause()
	h.waitFor(name+" paused in a write", 10*time.Second, func() (bool, string) {
		select {
		case <-p.blocked:
			return true, ""
		default:
			return false, "no write yet"
		}
	})
	m.plug.Pull()
	h.logf("%s paused writing %v with token %d, and cut off", name, p.part, p.token)
	h.waitFor("a new owner writes "+p.part.String(), 20*time.Second, func() (bool, string) {
		tok, _ := h.sink.Token(p.part)
		return tok > p.token, fmt.Sprintf("sink's token %d", tok)
	})
	fencedBefore := h.sink.Stats().Fenced
	close(p.release)
	h.waitFor("the zombie's write fenced", 10*time.Second, func() (bool, string) {
		return h.sink.Stats().Fenced > fencedBefore, ""
	})
	m.cancel()
	<-m.ran
	m.bury()
	h.logf("%s's paused write was fenced; it is dead", name)
}

// converged waits until the live members agree on the member list and
// split all partitions between them with no hand-off pending.
func (h *harness) converged() {
	h.t.Helper()
	var names []string
	for _, m := range h.members {
		names = append(names, m.name)
	}
	slices.Sort(names)
	h.waitFor("converged on "+fmt.Sprint(names), 30*time.Second, func() (bool, string) {
		owner := make(map[zkalloc.Partition]string)
		for _, m := range h.members {
			u := m.alloc.Current()
			if !slices.Equal(u.Members, names) || len(u.Pending) > 0 {
				return false, fmt.Sprintf("%s sees %v, %d pending", m.name, u.Members, len(u.Pending))
			}
			for _, p := range u.Assigned {
				if o, dup := owner[p]; dup {
					return false, fmt.Sprintf("%v assigned to %s and %s", p, o, m.name)
				}
				owner[p] = m.name
			}
		}
		return len(owner) == numParts, fmt.Sprintf("%d of %d assigned", len(owner), numParts)
	})
	h.logf("converged on %v", names)
}

// progress waits until the sink accepts more records, so that each step
// runs under load, and logs the sink's counts since the last step.
func (h *harness) progress() {
	h.t.Helper()
	want := h.sink.Stats().Accepted + 500
	h.waitFor("500 more records accepted", 20*time.Second, func() (bool, string) {
		got := h.sink.Stats().Accepted
		return got >= want, fmt.Sprintf("%d accepted", got)
	})
	st := h.sink.Stats()
	h.logf("since the last step: %d accepted, %d redelivered and dropped, %d fenced",
		st.Accepted-h.last.Accepted, st.Redelivered-h.last.Redelivered, st.Fenced-h.last.Fenced)
	h.last = st
}

func (h *harness) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v: %s", what, timeout, state)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
}

func (h *harness) closeAll() {
	for len(h.members) > 0 {
		h.close(h.members[0].name)
	}
}

type producer struct {
	stopc chan struct{}
	done  chan struct{}
	n     int
	err   error
	t     *testing.T
}

// startProducer writes numbered records, number n to partition n%32, in
// small batches until stopped. A batch is never cut short, so that n
// counts every record in Kafka.
func (h *harness) startProducer() *producer {
	cl := h.newClient(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	p := &producer{stopc: make(chan struct{}), done: make(chan struct{}), t: h.t}
	go func() {
		defer close(p.done)
		defer cl.Close()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			recs := make([]*kgo.Record, 8)
			for i := range recs {
				n := p.n + i
				recs[i] = &kgo.Record{Topic: topic, Partition: int32(n % numParts), Value: []byte(strconv.Itoa(n))}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				p.err = err
				return
			}
			p.n += len(recs)
			select {
			case <-p.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop stops the producer and returns how many records it wrote.
func (p *producer) stop() int {
	close(p.stopc)
	<-p.done
	if p.err != nil {
		p.t.Fatalf("producer: %v", p.err)
	}
	return p.n
}

// gate passes writes to the shared sink, and can pause one mid-way.
type gate struct {
	franzgo.Sink
	mu     sync.Mutex
	paused *pausedWrite
}

type pausedWrite struct {
	blocked chan struct{} // closed when a write waits
	release chan struct{} // closed by the test to let it go on
	part    zkalloc.Partition
	token   int64
}

func (g *gate) pause() *pausedWrite {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = &pausedWrite{blocked: make(chan struct{}), release: make(chan struct{})}
	return g.paused
}

func (g *gate) Write(ctx context.Context, p zkalloc.Partition, token, offset int64, value []byte) error {
	g.mu.Lock()
	pw := g.paused
	g.paused = nil
	if pw != nil {
		pw.part, pw.token = p, token
	}
	g.mu.Unlock()
	if pw != nil {
		close(pw.blocked)
		<-pw.release
	}
	return g.Sink.Write(ctx, p, token, offset, value)
}
