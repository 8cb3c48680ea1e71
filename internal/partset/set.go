package partset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/ioloop"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zkwatch"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Config configures a [Set]. Every field is required but Seed: the
// allocator sets them all (its New), and [New] panics, naming the field,
// if one is missing. There are no defaults here.
type Config struct {
	Paths zkpath.Group
	// Seed is merged into the set once, in the first session, before the
	// first view is published. It is valid, as [partitions.Normalize]
	// checks it (the allocator's New has).
	Seed    map[string][]int32
	Session *actor.Latest[zksession.State]
	// ACL is given to the nodes the actor creates.
	ACL []zk.ACL
	// Resync is the period of a safety re-read of the whole set. The set
	// is also re-read after every reconnection.
	Resync time.Duration
	Logger *slog.Logger
	Clock  actor.Clock
}

// Set is the actor that owns this member's copy of the shared set. Create
// it with [New]; read views from [Set.Views].
type Set struct {
	cfg   Config
	out   *actor.Outbox[partitions.View]
	inbox chan msg
	done  chan struct{}

	// Owned by Run.
	loop     *ioloop.Loop       // the session state and the retries
	seed     map[string][]int32 // nil once merged
	pending  []change
	needList bool
	dirty    map[string]struct{} // topics to re-read
	topics   map[string]topicState
	dirPzxid int64
	watches  *zkwatch.Set
	// armed holds the watch each read armed, by key (a topic, or "" for
	// the list), as the client returned it, for [Set.changedSince].
	armed   map[string]<-chan zk.Event
	unsaid  bool // a reading not published yet
	last    partitions.View
	lastSet bool
}

type topicState struct {
	ids   []int32 // nil if err is set
	count int     // how many IDs the data holds, if it is valid
	mzxid int64
	err   error
	// over: the data is valid, but past MaxPartitions (see place); its
	// IDs are not kept, and it is read again once it fits.
	over bool
	// unread: its name is past MaxTopicsBytes; its node is not read.
	unread bool
}

// New returns a set actor; it starts nothing. It panics if cfg misses a
// required field or its seed is invalid: a programming error.
func New(cfg Config) *Set {
	if f := cfg.missing(); f != "" {
		panic("partset: New: Config." + f + " is required")
	}
	seed, err := partitions.Normalize(cfg.Seed)
	if err != nil {
		panic(fmt.Sprintf("partset: New: Config.Seed: %v", err))
	}
	return &Set{
		cfg:     cfg,
		out:     actor.NewOutbox[partitions.View](),
		inbox:   make(chan msg),
		done:    make(chan struct{}),
		seed:    seed,
		dirty:   make(map[string]struct{}),
		topics:  make(map[string]topicState),
		watches: zkwatch.New(),
		armed:   make(map[string]<-chan zk.Event),
		loop:    ioloop.New(ioloop.Config{Session: cfg.Session, Clock: cfg.Clock, Logger: cfg.Logger, What: "partition set update", Fatal: isFatal}),
	}
}

// missing names the first required field of c that is not set, or "".
func (c Config) missing() string {
	switch {
	case c.Paths.Group == "":
		return "Paths"
	case c.Session == nil:
		return "Session"
	case len(c.ACL) == 0:
		return "ACL"
	case c.Resync <= 0:
		return "Resync"
	case c.Logger == nil:
		return "Logger"
	case c.Clock == nil:
		return "Clock"
	}
	return ""
}

// errFatal marks the errors that stop the actor.
var errFatal = errors.New("partitions: cannot continue")

func isFatal(err error) bool { return errors.Is(err, errFatal) }

// Views delivers the set, latest-wins: a slow reader gets the newest
// view and never blocks the actor. It is closed when Run returns.
func (s *Set) Views() <-chan partitions.View { return s.out.C() }

// Add merges the given IDs into the shared set and returns once the write
// is done. It waits for a session if there is none. It is safe for
// concurrent use; it returns [actor.ErrClosed] once Run has returned.
func (s *Set) Add(ctx context.Context, topics map[string][]int32) error {
	return s.request(ctx, false, topics)
}

// Remove takes the given IDs out of the shared set, like [Set.Add].
func (s *Set) Remove(ctx context.Context, topics map[string][]int32) error {
	return s.request(ctx, true, topics)
}

func (s *Set) request(ctx context.Context, remove bool, topics map[string][]int32) error {
	norm, err := partitions.Normalize(topics)
	if err != nil {
		return err
	}
	if len(norm) == 0 {
		return nil
	}
	res, err := actor.Call(ctx, s.done, s.inbox, func(reply chan<- error) msg {
		return change{ctx: ctx, remove: remove, topics: norm, reply: reply}
	})
	if err != nil {
		return err
	}
	return res
}

// Run keeps the set until ctx is cancelled; it returns nil then.
// ZooKeeper errors are retried with backoff for as long as it runs; it
// fails only if the seed cannot be merged: a topic's data in ZooKeeper is
// corrupt, or the seed's topics with those there would pass
// [partitions.MaxTopicsBytes].
func (s *Set) Run(ctx context.Context) error {
	defer close(s.done)
	defer s.out.Close()
	defer s.watches.Close()
	resync := s.cfg.Clock.NewTimer(s.cfg.Resync)
	defer resync.Stop()
	defer s.loop.Stop()

	for {
		if s.hasWork() {
			if stop, err := s.loop.Attempt(ctx, s.work); stop {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.loop.Changed():
			if fresh, ok := s.loop.Take(); ok && fresh {
				s.needList = true // watches may not have survived
			}
		case m := <-s.inbox:
			switch m := m.(type) {
			case change:
				s.pending = append(s.pending, m)
			}
		case f := <-s.watches.C():
			s.fired(f)
			// One write often fires several watches at once (a multi that
			// creates a topic and updates another): take every one that is
			// ready before reading, so fewer partial views are published.
			for more := true; more; {
				select {
				case f := <-s.watches.C():
					s.fired(f)
				default:
					more = false
				}
			}
		case <-resync.C():
			s.needList = true
			resync.Reset(s.cfg.Resync)
		case <-s.loop.C():
			s.loop.Fired()
		case s.out.Send() <- s.out.Pending():
			s.out.Sent()
		}
	}
}

func (s *Set) fired(f zkwatch.Fired) {
	if f.Key == "" {
		s.needList = true
	} else {
		s.dirty[f.Key] = struct{}{}
	}
}

func (s *Set) hasWork() bool {
	return s.seed != nil || len(s.pending) > 0 || s.needList || len(s.dirty) > 0
}

// work does what is due, in order: the seed, queued changes, then reads.
// It stops at the first ZooKeeper error, keeping what is left for the
// retry.
func (s *Set) work() error {
	conn := s.loop.State().Conn
	if s.seed != nil {
		// Every member but the first usually finds its seed stored: read
		// the set first (publish holds the view back while the seed is
		// pending) and write only if something is missing, which saves a
		// round trip on every start.
		if s.needList {
			if err := s.readAll(conn); err != nil {
				return err
			}
		}
		if !s.holds(s.seed) {
			if err := s.checkTopicList(s.seed); err != nil {
				return fmt.Errorf("%w: merge seed: %w", errFatal, err)
			}
			if err := write(conn, s.cfg.Paths, s.cfg.ACL, false, s.seed); err != nil {
				if !retryable(err) {
					return fmt.Errorf("%w: merge seed: %w", errFatal, err)
				}
				return fmt.Errorf("merge seed: %w", err)
			}
			s.needList = true
		}
		s.seed = nil // publish held the readings back: say them now
	}
	for len(s.pending) > 0 {
		c := s.pending[0]
		if err := c.ctx.Err(); err != nil {
			c.reply <- err
			s.pending = s.pending[1:]
			continue
		}
		if !c.remove && s.needList {
			// checkTopicList counts the topics there are.
			if err := s.readAll(conn); err != nil {
				return err
			}
		}
		err := s.apply(conn, c)
		if err != nil && retryable(err) {
			return err
		}
		c.reply <- ioloop.Permanent(err)
		s.pending = s.pending[1:]
	}
	return s.settle(conn)
}

// maxRounds bounds the readings of one attempt to settle the set: past
// it, the set is changing faster than it can be read, and the attempt
// fails, to be retried after a pause (see [Set.settle]).
const maxRounds = 8

// errUnsettled says that the set kept changing while it was read.
var errUnsettled = errors.New("the partition set kept changing while it was read")

// settle reads what is due until a reading holds still, then publishes
// it: it reads the list and every topic, or the topics whose watches
// fired, and again those that changed while it read (see
// [Set.changedSince]), until none did. So a view is the set as it was at
// its zxid, and two views with one zxid are the same view: without it, a
// multi that wrote two topics could be published in two views with its
// zxid, one with the first topic only (issue 26). It fails with
// errUnsettled after maxRounds readings that each found a change; the
// retry comes after a pause, and publishes nothing in between.
func (s *Set) settle(conn zksession.Conn) error {
	for round := 0; s.needList || len(s.dirty) > 0; round++ {
		if round == maxRounds {
			return fmt.Errorf("%w (%d readings)", errUnsettled, round)
		}
		var err error
		if s.needList {
			err = s.readAll(conn)
		} else {
			err = s.readDirty(conn)
		}
		if err != nil {
			return err
		}
	}
	if s.unsaid {
		s.publish(conn.SessionID())
	}
	return nil
}

// arm waits on ch, the watch a read armed for key (a topic, or "" for
// the list), through s.watches, and keeps it for [Set.changedSince].
func (s *Set) arm(key string, ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	s.watches.Add(key, ch)
	s.armed[key] = ch
}

// changedSince marks for reading again every topic (or the list) whose
// watch has fired since the read that armed it, and reports whether one
// has. Called once a read's replies are in, it finds every change the
// server made before it answered the last of them: ZooKeeper sends a
// watch's event before any reply to a request it serves after the change
// ("a client sees a watch event for a znode before it sees the new data"),
// and the client closes the watch's channel before it hands over a later
// reply (go-zookeeper's recvLoop; TestWatchFiresBeforeLaterReply checks
// it). The forwarding of s.watches runs on its own goroutines, and may
// not have delivered those events yet: it is not enough.
//
// So when it reports false, every topic held, and the list, is as the
// server had it when it answered the last read: each node unchanged since
// its read. The view is then the set as it was at the newest zxid it
// holds, and at every zxid from that one to the last reply.
//
// A fired watch whose event the forwarding had taken is read again here,
// and once more when the event arrives: a read that finds nothing new
// publishes nothing.
func (s *Set) changedSince() bool {
	changed := false
	for key, ch := range s.armed {
		select {
		case <-ch:
		default:
			continue
		}
		delete(s.armed, key)
		changed = true
		if key == "" {
			s.needList = true
		} else {
			s.dirty[key] = struct{}{}
		}
	}
	return changed
}

// apply writes one queued change, an addition only if the set's topics
// then stay within [partitions.MaxTopicsBytes].
func (s *Set) apply(conn zksession.Conn, c change) error {
	if !c.remove {
		if err := s.checkTopicList(c.topics); err != nil {
			return err
		}
	}
	return write(conn, s.cfg.Paths, s.cfg.ACL, c.remove, c.topics)
}

// checkTopicList refuses to add ids, a normalized change, if the set's
// topics would then pass [partitions.MaxTopicsBytes]. It counts the topics as last
// read: a member adding topics at the same moment can take the set past
// the bound, by no more than its own change.
//
// It also refuses to take the set past [partitions.MaxPartitions], counting the
// topics as read in the same way (a topic past the limit counts all its
// IDs, which are known; for one whose IDs are not kept, the change counts
// in full).
func (s *Set) checkTopicList(ids map[string][]int32) error {
	has := func(topic string) bool { _, ok := s.topics[topic]; return ok }
	if err := checkTopicsBytes(maps.Keys(s.topics), has, ids); err != nil {
		return err
	}
	total := 0
	for _, ts := range s.topics {
		if ts.err == nil || ts.over {
			total += ts.count
		}
	}
	for topic, add := range ids {
		ts, ok := s.topics[topic]
		switch {
		case ok && ts.err == nil:
			total += unionLen(ts.ids, add) - ts.count
		case ok && ts.over:
			total += len(add)
		default:
			total += len(add)
		}
	}
	return errPastTotal(total)
}

// errPastTotal refuses a change after which the set would hold total
// partitions, if that is past [partitions.MaxPartitions].
func errPastTotal(total int) error {
	if total > partitions.MaxPartitions {
		return fmt.Errorf("%w: the set would hold %d partitions, more than the limit of %d (MaxPartitions)", rebalance.ErrInvalid, total, partitions.MaxPartitions)
	}
	return nil
}

// checkTopicsBytes refuses to add ids, a normalized change, to a set
// whose topics are names (has tells whether one is among them) if its
// topic names would then pass [partitions.MaxTopicsBytes].
func checkTopicsBytes(names iter.Seq[string], has func(topic string) bool, ids map[string][]int32) error {
	n := partitions.TopicsBytes(names)
	for topic := range ids {
		if !has(topic) {
			n += partitions.ListedBytes(topic)
		}
	}
	if n > partitions.MaxTopicsBytes {
		return fmt.Errorf("%w: the set's topic names would take %d bytes, more than the limit of %d (MaxTopicsBytes)", rebalance.ErrInvalid, n, partitions.MaxTopicsBytes)
	}
	return nil
}

// unionLen is len(Union(a, b)), without building it.
func unionLen(a, b []int32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			i, j = i+1, j+1
		}
		n++
	}
	return n + len(a) - i + len(b) - j
}

// readAll re-reads every topic and re-arms every watch.
func (s *Set) readAll(conn zksession.Conn) error {
	names, stat, w, err := conn.ChildrenW(s.cfg.Paths.Partitions())
	if errors.Is(err, zk.ErrNoNode) {
		if err := zkpath.Ensure(conn, s.cfg.Paths.Partitions(), s.cfg.ACL...); err != nil {
			return err
		}
		names, stat, w, err = conn.ChildrenW(s.cfg.Paths.Partitions())
	}
	if err != nil {
		return fmt.Errorf("list topics %s: %w", s.cfg.Paths.Partitions(), err)
	}
	s.watches.Reset()
	clear(s.armed)
	s.arm("", w)
	s.dirPzxid = stat.Pzxid
	clear(s.dirty)
	slices.Sort(names)
	read, unread := splitTopicsBytes(names)
	fresh := make(map[string]fetched, len(read))
	for i, r := range fetchTopics(conn.GetW, s.cfg.Paths, read) {
		name := read[i]
		if errors.Is(r.err, zk.ErrNoNode) {
			continue // deleted since the listing; the list watch has fired
		}
		if r.err != nil {
			s.needList = true
			return r.err
		}
		s.arm(name, r.watch)
		fresh[name] = r
	}
	for name := range s.topics {
		if _, ok := fresh[name]; !ok {
			if _, ok := unread[name]; !ok {
				delete(s.topics, name)
			}
		}
	}
	for name, err := range unread {
		s.topics[name] = topicState{err: err, unread: true}
	}
	if len(unread) > 0 {
		s.cfg.Logger.Error("zkalloc: not reading topics past the limit on their names (MaxTopicsBytes); their partitions are left out",
			"path", s.cfg.Paths.Partitions(), "limit", partitions.MaxTopicsBytes, "topics", len(names), "unread", len(unread), "firstUnread", names[len(read)])
	}
	s.place(fresh)
	s.needList = false
	s.unsaid = true
	s.changedSince()
	return nil
}

// holds reports whether the topics read hold every ID of ids, a
// normalized set; a corrupt topic holds nothing.
func (s *Set) holds(ids map[string][]int32) bool {
	for topic, want := range ids {
		ts, ok := s.topics[topic]
		if !ok || ts.err != nil {
			return false
		}
		have := ts.ids
		for _, id := range want {
			i, found := slices.BinarySearch(have, id)
			if !found {
				return false
			}
			have = have[i+1:]
		}
	}
	return true
}

// readDirty re-reads the topics whose watches fired.
func (s *Set) readDirty(conn zksession.Conn) error {
	names := slices.Sorted(maps.Keys(s.dirty))
	var first error
	fresh := make(map[string]fetched, len(names))
	for i, r := range fetchTopics(conn.GetW, s.cfg.Paths, names) {
		name := names[i]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			delete(s.topics, name)
		case r.err != nil:
			first = cmp.Or(first, r.err)
			continue // still dirty: read again on the retry
		default:
			s.arm(name, r.watch)
			fresh[name] = r
		}
		delete(s.dirty, name)
	}
	s.place(fresh)
	s.unsaid = true
	if first != nil {
		return first
	}
	s.changedSince()
	return nil
}

// fetched is one topic node as read by [fetchTopics], decoded.
type fetched struct {
	mzxid int64
	watch <-chan zk.Event
	data  []byte
	count int   // how many IDs data holds
	bad   error // the name or the data is not valid
	err   error // the read failed
}

// fetchTopics reads the given topic nodes with get, a client's GetW (or
// a Get that arms no watch), with the requests pipelined, and checks
// their data, counting its IDs (see [partitions.CountIDs]); [Set.place] decodes
// those it takes. It returns one result per name, in order.
func fetchTopics(get func(path string) ([]byte, *zk.Stat, <-chan zk.Event, error), paths zkpath.Group, names []string) []fetched {
	out := make([]fetched, len(names))
	inflight.Do(len(names), func(i int) {
		data, stat, w, err := get(paths.Topic(names[i]))
		if err != nil {
			out[i].err = err
			return
		}
		r := fetched{mzxid: stat.Mzxid, watch: w, data: data}
		if r.bad = rebalance.ValidateTopic(names[i]); r.bad == nil {
			r.count, r.bad = partitions.CountIDs(data)
		}
		out[i] = r
	})
	return out
}

// place keeps the topics just read, fresh, with the others as read
// before, and decides which of them the view takes, within
// [partitions.MaxPartitions]: in name order, each topic whose partitions fit in what
// the topics before it left. Only those are decoded; the others keep
// their count and are reported with an error naming the limit. One kept
// from before that fits now, after a change to an earlier topic, is marked
// dirty to be read again; one that no longer fits drops its IDs.
//
// Bad data is not an error of the read: it is kept in the topic's state,
// reported, and logged once per version of the node (see note).
func (s *Set) place(fresh map[string]fetched) {
	names := make([]string, 0, len(s.topics)+len(fresh))
	for name := range s.topics {
		if _, ok := fresh[name]; !ok {
			names = append(names, name)
		}
	}
	names = slices.AppendSeq(names, maps.Keys(fresh))
	slices.Sort(names)
	used := 0
	var refused []string // newly past the limit
	for _, name := range names {
		old, had := s.topics[name]
		ts := old
		if r, ok := fresh[name]; ok {
			ts = topicState{mzxid: r.mzxid, count: r.count, err: r.bad}
			if ts.err == nil {
				if used+ts.count <= partitions.MaxPartitions {
					ts.ids, ts.err = partitions.DecodeIDs(r.data)
					used += ts.count
				} else {
					ts.over, ts.err = true, errPastMaxPartitions(ts.count)
				}
			}
		} else {
			switch {
			case ts.err != nil && !ts.over: // corrupt or unread: holds nothing
			case used+ts.count <= partitions.MaxPartitions:
				used += ts.count
				if ts.over {
					s.dirty[name] = struct{}{}
				}
			case !ts.over:
				ts.ids, ts.over, ts.err = nil, true, errPastMaxPartitions(ts.count)
			}
		}
		if ts.over && (!had || !old.over || old.mzxid != ts.mzxid) {
			refused = append(refused, name)
		}
		s.note(name, ts)
		s.topics[name] = ts
	}
	if len(refused) > 0 {
		s.cfg.Logger.Error("zkalloc: leaving out topics past the limit on a group's partitions (MaxPartitions)", "limit", partitions.MaxPartitions,
			"topics", len(refused), "first", refused[:min(3, len(refused))])
	}
}

func errPastMaxPartitions(count int) error {
	return fmt.Errorf("%w: its %d partitions, after those of the topics before it in name order, would take the set past the limit of %d (MaxPartitions)",
		rebalance.ErrInvalid, count, partitions.MaxPartitions)
}

// splitTopicsBytes returns the prefix of names, sorted topic names as
// listed, that stays within [partitions.MaxTopicsBytes], and the others with why
// they are not read.
func splitTopicsBytes(names []string) ([]string, map[string]error) {
	n := 0
	for i, name := range names {
		if n += partitions.ListedBytes(name); n > partitions.MaxTopicsBytes {
			unread := make(map[string]error, len(names)-i)
			err := fmt.Errorf("%w: past the limit of %d bytes on the names of a set's topics (MaxTopicsBytes), counted in name order; not read",
				rebalance.ErrInvalid, partitions.MaxTopicsBytes)
			for _, name := range names[i:] {
				unread[name] = err
			}
			return names[:i], unread
		}
	}
	return names, nil
}

// note logs ts, the new state of topic name, if its data is corrupt, once
// per version of the node and reason. Topics past a limit are logged
// together, by the callers.
func (s *Set) note(name string, ts topicState) {
	if ts.err == nil || ts.over || ts.unread {
		return
	}
	if old, ok := s.topics[name]; ok && old.mzxid == ts.mzxid && errText(old.err) == errText(ts.err) {
		return
	}
	s.cfg.Logger.Error("zkalloc: ignoring topic with corrupt partition data", "topic", name, "err", ts.err)
}

func (s *Set) publish(sessionID int64) {
	if s.seed != nil {
		return // not merged yet: the view may lack it
	}
	s.unsaid = false
	v := partitions.View{Zxid: s.dirPzxid, SessionID: sessionID, Reconnects: s.loop.State().Reconnects}
	n := 0
	for _, ts := range s.topics {
		n += len(ts.ids)
	}
	v.Partitions = make([]rebalance.Partition, 0, n)
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		ts := s.topics[name]
		v.Zxid = max(v.Zxid, ts.mzxid)
		if ts.err != nil {
			v.Corrupt = append(v.Corrupt, partitions.TopicError{Topic: name, Err: ts.err})
			continue
		}
		for _, id := range ts.ids {
			v.Partitions = append(v.Partitions, rebalance.Partition{Topic: name, ID: id})
		}
	}
	if s.lastSet && v.Equal(s.last) && !s.last.Outdated() {
		return // a view whose watches fired is replaced, even by its like: the shell waits for one that holds
	}
	v.Changed = zkwatch.AnyFired(slices.Collect(maps.Values(s.armed))...)
	s.last, s.lastSet = v, true
	s.cfg.Logger.Debug("zkalloc: partition view", "zxid", v.Zxid, "partitions", len(v.Partitions))
	s.out.Put(v)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
