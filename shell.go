package zkalloc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// shellConfig configures a [shell]. Every field but expire and observer
// is required: New sets them (there are no defaults here).
type shellConfig struct {
	core     decision.Config // its Strategy is set from strategy's name
	strategy rebalance.Strategy
	// assigner, if set, runs the jobs instead of strategy: the sticky
	// strategy over the group's agreed record. Its runs wait on the
	// record, so a run is cancelled when a newer job is due.
	assigner seam.Assigner

	session    *actor.Latest[session.State]
	members    <-chan membership.View
	partitions <-chan partitions.View
	// want goes to the claims actor; held comes from it.
	want *actor.Latest[decision.Want]
	held *actor.Latest[decision.Held]
	// expire, with DepartureDelay, deletes the seats whose delay ran out
	// (the members actor's Expire); it must not block.
	expire func([]membership.Seat)
	logger *slog.Logger
	clock  actor.Clock

	// observer, if set, is told on the shell's goroutine of each Update
	// it publishes, of each the consumer receives, and of the ack of the
	// newest one it received: for zkalloctest, which follows its
	// consumers.
	observer seam.Observer
}

// shell is the thin loop around the member's decision core, after etcd
// raft's node around its RawNode: it feeds the core its inputs and the
// time, runs the strategy when the core asks, publishes the core's
// Updates latest-wins to the consumer, passes on the claims it wants, and
// keeps the allocator's [Stats]. Create it with newShell.
type shell struct {
	cfg     shellConfig
	core    *decision.Core
	out     *actor.Outbox[Update]
	ready   chan struct{} // closed when the first assignment is published
	current atomic.Pointer[Update]
	acks    *decision.Acks

	st        session.State // the newest state given to the core
	recv      Update        // the newest Update the consumer received
	recvAny   bool          // it has received one
	recvAcked bool          // it was acked

	giveUp     chan struct{} // closed by GiveUp
	giveUpOnce sync.Once
	drainEnd   decision.DrainEnd // how the drain ended; written by Run before it returns

	// The stats snapshot, stored when it changes; statsChanged then gets
	// a token (it never blocks the loop).
	stats        atomic.Pointer[Stats]
	statsChanged chan struct{}
	computeTimes Histogram // its Count is the strategy's runs
	lastCompute  time.Duration

	// What the loop has seen towards its first Update, for Start's error
	// when its context ends first (see [shell.Waiting]); no longer kept
	// once the first is published.
	progressMu sync.Mutex
	progress   progress
}

// progress is how far a shell has got towards its first Update.
type progress struct {
	members bool      // a member view has come
	listed  bool      // the newest lists this member
	parts   bool      // a partition view has come
	running time.Time // when the strategy run under way began; zero if none
	failed  error     // the last run's failure; nil if it succeeded
}

func newShell(cfg shellConfig) *shell {
	cfg.core.Strategy = cfg.strategy.Name()
	acks := decision.NewAcks()
	cfg.core.Acks = acks
	return &shell{
		cfg:   cfg,
		core:  decision.NewCore(cfg.core, cfg.clock.Now()),
		out:   actor.NewOutbox[Update](),
		ready: make(chan struct{}),
		acks:  acks,

		giveUp: make(chan struct{}),

		statsChanged: make(chan struct{}, 1),
	}
}

// Stats returns the newest snapshot of the member's state and counters;
// before the first, which Run stores at once, the zero Stats but for
// SessionState, StateIdle. It is safe for concurrent use.
func (s *shell) Stats() Stats {
	if p := s.stats.Load(); p != nil {
		return *p
	}
	return Stats{SessionState: StateIdle}
}

// StatsChanged receives a token when [shell.Stats] has changed since the
// token was last taken.
func (s *shell) StatsChanged() <-chan struct{} { return s.statsChanged }

// storeStats stores the snapshot if it changed: a comparison of a few
// words per loop, an allocation only on a change.
func (s *shell) storeStats() {
	cur, _ := s.core.Current()
	var writes, conflicts uint64
	if s.cfg.assigner != nil {
		writes, conflicts = s.cfg.assigner.RecordCounts()
	}
	next := statsOf(s.st, cur, s.core.Counters(), writes, conflicts, s.computeTimes, s.lastCompute)
	if old := s.stats.Load(); old != nil && *old == next {
		return
	}
	s.stats.Store(&next)
	select {
	case s.statsChanged <- struct{}{}:
	default:
	}
}

// Updates delivers this member's assignment, latest-wins: a slow reader
// receives the newest snapshot, whose Added and Revoked cover everything
// since the last one it received, and never blocks the shell. It is
// closed when Run returns.
func (s *shell) Updates() <-chan Update { return s.out.C() }

// Ready is closed once the first assignment has been published on
// [shell.Updates].
func (s *shell) Ready() <-chan struct{} { return s.ready }

// Current returns the newest published snapshot, whether or not it has
// been received from Updates, and false before the first one. It is safe
// for concurrent use.
func (s *shell) Current() (Update, bool) {
	u := s.current.Load()
	if u == nil {
		return Update{}, false
	}
	return *u, true
}

// note records a step towards the first Update with change, until the
// first is published.
func (s *shell) note(change func(p *progress)) {
	if s.primed() {
		return
	}
	s.progressMu.Lock()
	change(&s.progress)
	s.progressMu.Unlock()
}

func (s *shell) primed() bool { return s.current.Load() != nil }

// Waiting returns what the loop is waiting for to publish its first
// Update, as an error that wraps the strategy's last failure if there
// is one: a run under way (and for how long), a run that failed, or the views
// it still needs. It returns nil once the first Update is published. It
// is safe for concurrent use: Start calls it when its context ends
// first.
func (s *shell) Waiting() error {
	if s.primed() {
		return nil
	}
	s.progressMu.Lock()
	p := s.progress
	s.progressMu.Unlock()
	name := s.cfg.core.Strategy
	switch {
	case !p.running.IsZero() && p.failed != nil:
		return fmt.Errorf("strategy %s has not returned after %v (its previous run failed: %w)", name, s.cfg.clock.Now().Sub(p.running).Round(time.Millisecond), p.failed)
	case !p.running.IsZero():
		return fmt.Errorf("strategy %s has not returned after %v", name, s.cfg.clock.Now().Sub(p.running).Round(time.Millisecond))
	case p.failed != nil:
		return p.failed // it names the strategy (rebalance.Compute)
	case !p.members:
		return errors.New("waiting for the member list")
	case !p.listed:
		return errors.New("waiting for this member to appear in the member list")
	case !p.parts:
		return errors.New("waiting for the partition set")
	}
	return errors.New("waiting for the first assignment and its claims")
}

// GiveUp tells Run to stop waiting for the consumer's ack of the final
// Update (the shutdown's context ended): Run drains, if ctx has not ended
// yet, and returns at once. It never blocks; calling it again does
// nothing. Safe for concurrent use.
func (s *shell) GiveUp() { s.giveUpOnce.Do(func() { close(s.giveUp) }) }

// DrainEnd says how Run's drain ended; read it after Run has returned.
func (s *shell) DrainEnd() decision.DrainEnd { return s.drainEnd }

// Run publishes updates until ctx is cancelled or GiveUp is called. Then
// it drains: it publishes an Update revoking everything and returns once
// the consumer has acked it, the drain's bound has passed, GiveUp was
// called, or the session has ended on the server (not merely its lease
// here: see [decision.Core.DrainEnd]), so that the claims, which go with
// the session, are kept until the consumer has stopped. It returns nil.
//
// The strategy runs in a goroutine of its own, one run at a time, so that
// a slow or stuck strategy holds up neither revocations, acks nor Close.
// Run does not wait for a run that has not returned when it does (a
// strategy that never returns must not hold up Close); its answer is
// dropped. A run starts only on views that still hold: while the newest
// member view or partition view is outdated (its Outdated check, sampled
// just before), the job waits for the newer view on its way, and a job
// made from views that are no longer the newest is dropped
// ([decision.Core.StartJob]).
func (s *shell) Run(ctx context.Context) error {
	defer s.out.Close()
	timer := actor.StoppedTimer(s.cfg.clock)
	defer timer.Stop()
	var wake time.Time // when timer is due; zero if stopped
	members, parts := s.cfg.members, s.cfg.partitions
	done, giveUp := ctx.Done(), s.giveUp
	closing := func() {
		done, members, parts = nil, nil, nil
		s.core.Close("allocator closing: every partition revoked")
	}
	results := make(chan computed)
	stop := make(chan struct{})
	defer close(stop)
	var running bool     // a strategy run is under way
	var cancelRun func() // cancels the assigner's run under way; nil if none
	defer func() {
		if cancelRun != nil {
			cancelRun()
		}
	}()
	var queued *decision.Job // the newest job asked for, not yet started
	// The newest views taken, even those the core ignores as equal to the
	// one before: their Outdated checks are the newest.
	var lastMembers membership.View
	var lastParts partitions.View
	for {
		r := s.core.Ready()
		s.apply(r)
		s.storeStats()
		if r.Compute != nil {
			queued = r.Compute
			if cancelRun != nil {
				// The record's run waits for views like the job's: a
				// newer job makes it moot.
				cancelRun()
				cancelRun = nil
			}
		}
		if queued != nil && !running {
			// The views' Outdated checks are sampled here, at the start,
			// and the core decides (see decision.Core.StartJob): a job
			// waits while a newer view is on its way, whose arrival runs
			// the loop again.
			switch s.core.StartJob(*queued, lastMembers.Outdated() || lastParts.Outdated()) {
			case decision.JobRun:
				began := s.cfg.clock.Now()
				s.note(func(p *progress) { p.running = began })
				if s.cfg.assigner != nil {
					cancelRun = s.startAssign(*queued, results, stop, began)
				} else {
					go s.compute(*queued, results, stop, began)
				}
				running, queued = true, nil
			case decision.JobDrop:
				queued = nil
			}
		}
		if done == nil && s.core.Drained() {
			s.drainEnd = s.core.DrainEnd()
			return nil
		}
		if next := r.Wake; !next.Equal(wake) {
			if next.IsZero() {
				timer.Stop()
			} else {
				timer.Reset(next.Sub(s.cfg.clock.Now()))
			}
			wake = next
		}
		select {
		case <-done:
			s.tick()
			closing()
		case <-giveUp:
			giveUp = nil
			s.tick()
			if done != nil {
				closing()
			}
			s.core.GiveUp("the shutdown's context ended")
		case c := <-results:
			running = false
			if cancelRun != nil {
				cancelRun()
				cancelRun = nil
			}
			if c.cancelled {
				// Cancelled for a newer job, which is queued: its answer
				// says nothing. The core still closes the old job.
				s.core.Computed(c.job, nil, c.err)
				break
			}
			s.note(func(p *progress) { p.running, p.failed = time.Time{}, c.err })
			s.computeTimes.observe(c.took)
			s.lastCompute = c.took
			s.tick()
			s.core.Computed(c.job, c.mine, c.err)
		case <-s.cfg.session.Changed():
			if st, ok := s.cfg.session.Take(); ok {
				s.tick()
				s.st = st
				s.core.SessionChanged(st)
			}
		case v, ok := <-members:
			if !ok {
				members = nil
				break
			}
			s.note(func(p *progress) {
				p.members = true
				p.listed = slices.Contains(v.Members, s.cfg.core.Member)
			})
			lastMembers = v
			s.tick()
			s.core.MembersRead(v)
		case v, ok := <-parts:
			if !ok {
				parts = nil
				break
			}
			s.note(func(p *progress) { p.parts = true })
			lastParts = v
			s.tick()
			s.core.PartitionsRead(v)
		case <-s.cfg.held.Changed():
			if h, ok := s.cfg.held.Take(); ok {
				s.tick()
				s.core.ClaimsHeld(h)
			}
		case <-s.acks.Wake():
			s.tick()
			s.core.Acked(s.acks.Highest())
			if s.recvAny && !s.recvAcked && s.acks.Acked(s.recv) {
				s.recvAcked = true
				if s.cfg.observer != nil {
					s.cfg.observer.Acked()
				}
			}
		case <-timer.C():
			wake = time.Time{}
			s.tick()
		case s.out.Send() <- s.out.Pending():
			u := s.out.Pending()
			s.delivered(u)
			s.out.Sent()
			s.tick()
			s.core.Delivered(u)
		}
	}
}

// computed is the answer to a Job.
type computed struct {
	job       decision.Job
	mine      []Partition
	err       error
	took      time.Duration
	cancelled bool // an assigner's run cancelled for a newer job
}

// startAssign starts assign in a goroutine and returns what cancels it.
func (s *shell) startAssign(job decision.Job, out chan<- computed, stop <-chan struct{}, began time.Time) (cancel func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go s.assign(ctx, job, out, stop, began)
	return cancel
}

// assign runs job through the assigner (the sticky record) and sends its
// answer, unless Run has returned meanwhile.
func (s *shell) assign(ctx context.Context, job decision.Job, out chan<- computed, stop <-chan struct{}, began time.Time) {
	mine, err := s.cfg.assigner.Assign(ctx, job)
	c := computed{job: job, mine: mine, err: err, took: s.cfg.clock.Now().Sub(began)}
	if err != nil && ctx.Err() != nil {
		c.cancelled = true
	} else if err != nil {
		c.err = fmt.Errorf("%w: %s: %w", rebalance.ErrStrategy, s.cfg.strategy.Name(), err)
	}
	select {
	case out <- c:
	case <-stop:
	}
}

// compute runs the strategy for job and sends its answer, unless Run has
// returned meanwhile.
func (s *shell) compute(job decision.Job, out chan<- computed, stop <-chan struct{}, began time.Time) {
	result, err := rebalance.Compute(s.cfg.strategy, job.Members, job.Partitions)
	took := s.cfg.clock.Now().Sub(began)
	select {
	case out <- computed{job: job, mine: result[s.cfg.core.Member], err: err, took: took}:
	case <-stop:
	}
}

func (s *shell) tick() { s.core.Tick(s.cfg.clock.Now()) }

// apply carries out what r says but the strategy run and the wake-up.
func (s *shell) apply(r decision.Ready) {
	for _, l := range r.Logs {
		s.cfg.logger.Log(context.Background(), l.Level, l.Msg, l.Args...)
	}
	if r.Want != nil {
		s.cfg.want.Set(*r.Want)
	}
	if r.Expire != nil && s.cfg.expire != nil {
		s.cfg.expire(r.Expire)
	}
	if r.Publish != nil {
		u := *r.Publish
		if s.cfg.observer != nil {
			s.cfg.observer.Published(u) // before anyone can see u
		}
		s.out.Put(u)
		s.current.Store(&u)
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
	}
}

// delivered notes that the consumer received u.
func (s *shell) delivered(u Update) {
	s.recv, s.recvAny = u, true
	s.recvAcked = s.acks.Acked(u) // acked from Current before it was received
	if s.cfg.observer != nil {
		s.cfg.observer.Received(u, s.recvAcked)
	}
}
