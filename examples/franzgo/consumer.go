// Package franzgo consumes Kafka with franz-go on the partitions that a
// zkalloc member is assigned, and writes each record's result to a sink
// exactly once.
//
// The pattern, per partition:
//
//   - Added: read the group's committed offset from Kafka (kadm), start
//     fetching there (kgo.Client.AddConsumePartitions), and remember the
//     partition's fencing token.
//   - Each record: Sink.Write with the token and the record's offset. The
//     sink refuses a token older than one it has seen for the partition
//     (a paused old owner: ErrFenced) and drops an offset it already holds
//     (a redelivery after a crash), so its accepted writes hold every
//     offset once.
//   - Revoked: stop fetching (RemoveConsumePartitions), commit the next
//     offset to Kafka, and only then Ack, so that the next owner starts
//     where this one stopped.
//
// A member that crashes commits nothing more: its next owner starts from
// the last commit and re-reads what was processed since, which the sink
// drops as duplicates.
package franzgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/zkalloc/zkalloc"
)

// ErrFenced is returned by Sink.Write when a newer owner of the partition
// has written to it: the writer no longer owns the partition.
var ErrFenced = errors.New("franzgo: fenced by a newer owner")

// Sink is where processed records go. Write must be atomic per call and
// must, for one partition:
//   - return ErrFenced if token is lower than a token it has accepted a
//     write with;
//   - accept (return nil without storing) an offset below the next one it
//     expects: a redelivery of a record it holds already;
//   - otherwise store the record and expect offset+1 next.
//
// A database does this with one conditional write per record or batch
// that stores the token and the next offset beside the result.
type Sink interface {
	Write(ctx context.Context, p zkalloc.Partition, token, offset int64, value []byte) error
}

// Consumer runs one member's franz-go consumer. Fill in the fields, then
// call Run with the allocator's Updates.
type Consumer struct {
	// Client fetches the records: a direct client, created without
	// kgo.ConsumerGroup or kgo.ConsumeTopics; Run adds and removes its
	// partitions.
	Client *kgo.Client
	// Group is the Kafka consumer group whose committed offsets (read and
	// written with kadm, outside any Kafka group membership) are where a
	// partition's next owner starts.
	Group string
	// Sink receives every record.
	Sink Sink
	// CommitInterval is how often the offsets of partitions still owned are
	// committed; a crash redelivers at most this much. Revoked partitions
	// are always committed before the Ack. Default 1 s.
	CommitInterval time.Duration
	// PollWait bounds one poll, and so how long an Update waits while no
	// records arrive. Default 100 ms.
	PollWait time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger

	adm   *kadm.Client
	owned map[zkalloc.Partition]*position
}

// position is where the consumer is in one partition it owns.
type position struct {
	token     int64
	next      int64 // offset of the next record to write
	committed int64 // next as last committed; -1 for none
}

// token returns the fencing token of p in u, and false if u does not
// assign p: the creation zxid of p's claim, which grows each time p
// changes hands, so that the sink can refuse the writes of an owner that
// has lost it. The one place to change for another token.
func token(u zkalloc.Update, p zkalloc.Partition) (int64, bool) {
	return u.Token(p)
}

// Run consumes the partitions that updates gives until updates is closed
// (after zkalloc's Close, whose final Update it acks after committing) or
// ctx ends. When ctx ends Run returns at once, committing and acking
// nothing, as a process that dies would.
func (c *Consumer) Run(ctx context.Context, updates <-chan zkalloc.Update) error {
	if c.CommitInterval <= 0 {
		c.CommitInterval = time.Second
	}
	if c.PollWait <= 0 {
		c.PollWait = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.adm = kadm.NewClient(c.Client)
	c.owned = make(map[zkalloc.Partition]*position)
	lastCommit := time.Now()
	for {
		// Updates first: a revocation must not wait behind records.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case u, ok := <-updates:
			if !ok {
				return nil
			}
			if err := c.apply(ctx, u); err != nil {
				return err
			}
			continue
		default:
		}
		if len(c.owned) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case u, ok := <-updates:
				if !ok {
					return nil
				}
				if err := c.apply(ctx, u); err != nil {
					return err
				}
			}
			continue
		}
		if err := c.poll(ctx); err != nil {
			return err
		}
		if time.Since(lastCommit) >= c.CommitInterval {
			if err := c.commit(ctx, c.ownedList()); err != nil {
				c.Logger.Warn("franzgo: commit", "err", err) // the sink drops what is redelivered
			}
			lastCommit = time.Now()
		}
	}
}

// apply stops the partitions u no longer assigns, commits them, acks, and
// starts the ones it assigns that are not running. That is u.Revoked and
// u.Added, and also restarts a partition dropped after ErrFenced that u
// still assigns, under its new token.
func (c *Consumer) apply(ctx context.Context, u zkalloc.Update) error {
	var stop, start []zkalloc.Partition
	for p := range c.owned {
		if !slices.Contains(u.Assigned, p) {
			stop = append(stop, p)
		}
	}
	for _, p := range u.Assigned {
		if c.owned[p] == nil {
			start = append(start, p)
		}
	}
	if len(stop) > 0 {
		// Records are written in poll, on this goroutine: none is in flight.
		c.Client.RemoveConsumePartitions(byTopic(stop))
		if err := c.commit(ctx, stop); err != nil && ctx.Err() == nil {
			// Acking anyway: the next owner re-reads from the older commit,
			// and the sink drops what it holds already.
			c.Logger.Warn("franzgo: commit revoked partitions", "err", err)
		}
		for _, p := range stop {
			delete(c.owned, p)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err() // dead: no Ack
	}
	u.Ack()
	for p, pos := range c.owned {
		// A token grows while p stays here if its claim was taken anew.
		if t, ok := token(u, p); ok && t > pos.token {
			pos.token = t
		}
	}
	if len(start) == 0 {
		return nil
	}
	committed, err := c.adm.FetchOffsets(ctx, c.Group)
	if err == nil {
		err = committed.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet
	}
	if err != nil {
		return fmt.Errorf("franzgo: fetch committed offsets of %s: %w", c.Group, err)
	}
	offsets := make(map[string]map[int32]kgo.Offset)
	for _, p := range start {
		t, ok := token(u, p)
		if !ok {
			// Not expected; the next Update retries it.
			c.Logger.Warn("franzgo: no token; not starting", "partition", p, "generation", u.Generation)
			continue
		}
		pos := &position{token: t, committed: -1}
		at := kgo.NewOffset().AtStart()
		if o, ok := committed.Lookup(p.Topic, p.ID); ok && o.At >= 0 {
			pos.next, pos.committed = o.At, o.At
			at = kgo.NewOffset().At(o.At)
		}
		c.owned[p] = pos
		if offsets[p.Topic] == nil {
			offsets[p.Topic] = make(map[int32]kgo.Offset)
		}
		offsets[p.Topic][p.ID] = at
	}
	c.Client.AddConsumePartitions(offsets)
	return nil
}

// poll writes one batch of records to the sink.
func (c *Consumer) poll(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, c.PollWait)
	fetches := c.Client.PollRecords(pctx, 1000)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, fe := range fetches.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) {
			c.Logger.Warn("franzgo: fetch", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
		}
	}
	for it := fetches.RecordIter(); !it.Done(); {
		r := it.Next()
		p := zkalloc.Partition{Topic: r.Topic, ID: r.Partition}
		pos := c.owned[p]
		if pos == nil || r.Offset < pos.next {
			continue // buffered before a revocation, or from an older start
		}
		err := c.Sink.Write(ctx, p, pos.token, r.Offset, r.Value)
		switch {
		case errors.Is(err, ErrFenced):
			// Another member owns p now; our Update saying so is on its way.
			// If one still assigns p, apply restarts it under the new token.
			c.Logger.Warn("franzgo: fenced", "partition", p, "token", pos.token)
			c.Client.RemoveConsumePartitions(byTopic([]zkalloc.Partition{p}))
			delete(c.owned, p)
			continue
		case err != nil:
			return fmt.Errorf("franzgo: write %v@%d: %w", p, r.Offset, err)
		}
		pos.next = r.Offset + 1
	}
	return nil
}

// commit commits the next offset of each of ps that moved since its last
// commit. Only offsets the sink has accepted are committed, so a commit
// never skips a record.
func (c *Consumer) commit(ctx context.Context, ps []zkalloc.Partition) error {
	offsets := make(kadm.Offsets)
	for _, p := range ps {
		if pos := c.owned[p]; pos != nil && pos.next > pos.committed {
			offsets.Add(kadm.Offset{Topic: p.Topic, Partition: p.ID, At: pos.next, LeaderEpoch: -1})
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	resp, err := c.adm.CommitOffsets(ctx, c.Group, offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return err
	}
	offsets.Each(func(o kadm.Offset) {
		c.owned[zkalloc.Partition{Topic: o.Topic, ID: o.Partition}].committed = o.At
	})
	return nil
}

func (c *Consumer) ownedList() []zkalloc.Partition {
	ps := make([]zkalloc.Partition, 0, len(c.owned))
	for p := range c.owned {
		ps = append(ps, p)
	}
	return ps
}

func byTopic(ps []zkalloc.Partition) map[string][]int32 {
	m := make(map[string][]int32)
	for _, p := range ps {
		m[p.Topic] = append(m[p.Topic], p.ID)
	}
	return m
}
