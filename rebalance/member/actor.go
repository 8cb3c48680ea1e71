package member

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/claims"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
	"github.com/zkalloc/zkalloc/session"
)

// ActorConfig configures an [Actor]. Every field but Logger and Clock is
// required.
type ActorConfig struct {
	Config
	Strategy rebalance.Strategy // overrides Config.Strategy's name

	Session *actor.Latest[session.State]
	Members <-chan membership.View
	Parts   <-chan partitions.View
	// Desired goes to the claims actor; Held comes from it.
	Desired *actor.Latest[claims.Desired]
	Held    *actor.Latest[claims.Held]
	// Expire, with DepartureDelay, deletes the seats whose delay ran out
	// (membership's Expire); it must not block.
	Expire func([]membership.Seat)
	// Stuck, if not nil, takes the core's reports of stuck claims to the
	// claims actor, which logs who holds them.
	Stuck *claims.StuckBox

	Logger *slog.Logger
	Clock  actor.Clock
}

// Output says how an [Actor] hands its Updates to the consumer: as a U,
// the consumer's own type (the root package's Update), so that the
// consumer receives straight from the actor's outbox, and the hand-off
// counts an Update as received when the consumer itself has taken it.
type Output[U any] struct {
	// Wrap makes the consumer's value of an Update; required. It runs on
	// the actor's goroutine when the Update is published.
	Wrap func(Update) U
	// Received and Acked, if set, are told on the actor's goroutine of
	// each Update the consumer receives (acked says whether it was acked
	// already, taken from Current), and of the ack of the newest one it
	// received. They must not block. For tests that look at the consumer.
	Received func(u U, acked bool)
	Acked    func()
}

// Actor is the thin loop around a [Core]: it feeds the core its inputs
// and the time, runs the strategy when the core asks, publishes the
// core's Updates latest-wins, as U (see [Output]), and passes on the
// claims it wants. Create it with [NewActor].
type Actor[U any] struct {
	cfg     ActorConfig
	wrap    Output[U]
	core    *Core
	out     *actor.Outbox[U]
	outUpd  Update        // the Update out holds, while it has one
	ready   chan struct{} // closed when the first assignment is published
	current atomic.Pointer[U]
	acks    *acks

	recvSeq   uint64 // the seq of the newest Update the consumer received; 0 before the first
	recvAcked bool   // it was acked

	// The stats snapshot, stored when it changes; statsChanged then gets
	// a token (it never blocks the loop).
	stats        atomic.Pointer[Stats]
	statsChanged chan struct{}
	computes     uint64
	lastCompute  time.Duration
}

// NewActor returns a member actor that hands its Updates out as
// out.Wrap makes them; it starts nothing.
func NewActor[U any](cfg ActorConfig, out Output[U]) *Actor[U] {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = actor.RealClock()
	}
	cfg.Config.Strategy = cfg.Strategy.Name()
	return &Actor[U]{
		cfg:   cfg,
		wrap:  out,
		core:  NewCore(cfg.Config, cfg.Clock.Now()),
		out:   actor.NewOutbox[U](),
		ready: make(chan struct{}),
		acks:  newAcks(),

		statsChanged: make(chan struct{}, 1),
	}
}

// Stats returns the newest snapshot of the member's state and counters.
// It is safe for concurrent use.
func (a *Actor[U]) Stats() Stats {
	if s := a.stats.Load(); s != nil {
		return *s
	}
	return Stats{}
}

// StatsChanged receives a token when [Actor.Stats] has changed since the
// token was last taken.
func (a *Actor[U]) StatsChanged() <-chan struct{} { return a.statsChanged }

// storeStats stores the snapshot if it changed: a comparison of a few
// words per loop, an allocation only on a change.
func (a *Actor[U]) storeStats() {
	s := a.core.stats()
	s.Computes, s.LastCompute = a.computes, a.lastCompute
	if old := a.stats.Load(); old != nil && *old == s {
		return
	}
	a.stats.Store(&s)
	select {
	case a.statsChanged <- struct{}{}:
	default:
	}
}

// Updates delivers this member's assignment, latest-wins: a slow reader
// receives the newest snapshot, whose Added and Revoked cover everything
// since the last one it received, and never blocks the actor. It is closed
// when Run returns.
func (a *Actor[U]) Updates() <-chan U { return a.out.C() }

// Ready is closed once the first assignment has been published on
// [Actor.Updates].
func (a *Actor[U]) Ready() <-chan struct{} { return a.ready }

// Current returns the newest published snapshot, whether or not it has
// been received from Updates, and false before the first one. It is safe
// for concurrent use.
func (a *Actor[U]) Current() (U, bool) {
	u := a.current.Load()
	if u == nil {
		var zero U
		return zero, false
	}
	return *u, true
}

// Run publishes updates until ctx is cancelled. Then it drains: it
// publishes an Update revoking everything and returns once the consumer
// has acked it, the drain's bound has passed, or the session has ended on
// the server (not merely its lease here: see [Core.Drained]), so that the
// claims, which go with the session, are kept until the consumer has
// stopped. It returns nil.
//
// The strategy runs in a goroutine of its own, one run at a time, so that
// a slow or stuck strategy holds up neither revocations, acks nor Close.
// Run does not wait for a run that has not returned when it does (a
// strategy that never returns must not hold up Close); its answer is
// dropped.
func (a *Actor[U]) Run(ctx context.Context) error {
	defer a.out.Close()
	timer := actor.StoppedTimer(a.cfg.Clock)
	defer timer.Stop()
	var wake time.Time // when timer is due; zero if stopped
	members, parts := a.cfg.Members, a.cfg.Parts
	done := ctx.Done()
	results := make(chan computed)
	stop := make(chan struct{})
	defer close(stop)
	var running bool // a strategy run is under way
	var queued *Job  // the newest job asked for, not yet started
	for {
		r := a.core.Ready()
		a.apply(r)
		a.storeStats()
		if r.Compute != nil {
			queued = r.Compute
		}
		if queued != nil && !running {
			go a.compute(*queued, results, stop)
			running, queued = true, nil
		}
		if done == nil && a.core.Drained() {
			return nil
		}
		if next := r.Wake; !next.Equal(wake) {
			if next.IsZero() {
				timer.Stop()
			} else {
				timer.Reset(next.Sub(a.cfg.Clock.Now()))
			}
			wake = next
		}
		select {
		case <-done:
			done, members, parts = nil, nil, nil
			a.tick()
			a.core.Close("allocator closing: every partition revoked")
		case c := <-results:
			running = false
			a.computes++
			a.lastCompute = c.took
			a.tick()
			a.core.Computed(c.job, c.mine, c.err)
		case <-a.cfg.Session.Changed():
			if st, ok := a.cfg.Session.Take(); ok {
				a.tick()
				a.core.Session(st)
			}
		case v, ok := <-members:
			if !ok {
				members = nil
				break
			}
			a.tick()
			a.core.Members(v)
		case v, ok := <-parts:
			if !ok {
				parts = nil
				break
			}
			a.tick()
			a.core.Parts(v)
		case <-a.cfg.Held.Changed():
			if h, ok := a.cfg.Held.Take(); ok {
				a.tick()
				a.core.Held(h)
			}
		case <-a.acks.wake:
			a.tick()
			acked := a.acks.highest.Load()
			a.core.Ack(acked)
			if a.recvSeq != 0 && !a.recvAcked && acked >= a.recvSeq {
				a.recvAcked = true
				if a.wrap.Acked != nil {
					a.wrap.Acked()
				}
			}
		case <-timer.C():
			wake = time.Time{}
			a.tick()
		case a.out.Send() <- a.out.Pending():
			u := a.outUpd
			a.delivered(a.out.Pending(), u)
			a.out.Sent()
			a.outUpd = Update{}
			a.tick()
			a.core.Delivered(u)
		}
	}
}

// computed is the answer to a Job.
type computed struct {
	job  Job
	mine []Partition
	err  error
	took time.Duration
}

// compute runs the strategy for job and sends its answer, unless Run has
// returned meanwhile.
func (a *Actor[U]) compute(job Job, out chan<- computed, stop <-chan struct{}) {
	began := a.cfg.Clock.Now()
	result, err := rebalance.Compute(a.cfg.Strategy, job.Members, job.Parts)
	took := a.cfg.Clock.Now().Sub(began)
	select {
	case out <- computed{job: job, mine: result[a.cfg.Member], err: err, took: took}:
	case <-stop:
	}
}

func (a *Actor[U]) tick() { a.core.Tick(a.cfg.Clock.Now()) }

// apply carries out what r says but the strategy run and the wake-up.
func (a *Actor[U]) apply(r Ready) {
	for _, l := range r.Logs {
		a.cfg.Logger.Log(context.Background(), l.Level, l.Msg, l.Args...)
	}
	if r.Desired != nil {
		a.cfg.Desired.Set(*r.Desired)
	}
	if r.Expire != nil && a.cfg.Expire != nil {
		a.cfg.Expire(r.Expire)
	}
	if a.cfg.Stuck != nil {
		a.cfg.Stuck.Put(r.Stuck...)
	}
	if u := r.Publish; u != nil {
		u.acks = a.acks
		w := a.wrap.Wrap(*u)
		a.out.Put(w)
		a.outUpd = *u
		a.current.Store(&w)
		select {
		case <-a.ready:
		default:
			close(a.ready)
		}
	}
}

// delivered notes that the consumer received w, made of u.
func (a *Actor[U]) delivered(w U, u Update) {
	a.recvSeq = u.seq
	a.recvAcked = a.acks.highest.Load() >= u.seq // acked from Current before it was received
	if a.wrap.Received != nil {
		a.wrap.Received(w, a.recvAcked)
	}
}
