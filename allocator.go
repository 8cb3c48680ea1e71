package zkalloc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/members"
	"github.com/zkalloc/zkalloc/internal/seam"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/rebalance"
)

var (
	// ErrClosed is returned by calls on an allocator that has been closed
	// or has stopped on an error.
	ErrClosed = errors.New("zkalloc: closed")
	// ErrNotStarted is returned by calls that need [Allocator.Start] first.
	ErrNotStarted = errors.New("zkalloc: not started")
	// ErrStarted is returned by a second call to [Allocator.Start].
	ErrStarted = errors.New("zkalloc: already started")
	// ErrDuplicateMember is wrapped by Start's error when another live
	// session still holds this member's name in the group as Start's
	// context ends (Start waits for it: it may be a crashed earlier run
	// of this member whose session has not expired yet), or when the
	// name is a node that is not a member's. It is also the error that
	// stops an allocator, after Start, whose name another process took
	// while its session was away.
	ErrDuplicateMember = membership.ErrDuplicateMember
	// ErrStrategyMismatch is wrapped by Start's error when a live member
	// of the group runs another strategy: members that compute different
	// assignments would leave partitions unconsumed. The error names the
	// member and both strategies.
	ErrStrategyMismatch = membership.ErrStrategyMismatch
	// ErrNoAuth is wrapped by the error that stops the allocator when
	// ZooKeeper refuses one of its requests for want of permission: the
	// ACL of a node, or of its parent, does not grant the credentials of
	// [Config.Auth]. It is not retried. The error names the path.
	ErrNoAuth = zk.ErrNoAuth
)

// Allocator is one member of a consumer group. Create it with [New], call
// [Allocator.Start], consume [Allocator.Updates], and end it with
// [Allocator.Shutdown] or [Allocator.Close]. All methods are safe for
// concurrent use.
type Allocator struct {
	cfg Config

	sess  seam.Session
	set   seam.Partitions
	names nameWaiter // nil if the members actor does not say
	reb   *shell
	group actor.Group

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc // stops the actors; nil before Start
	done    chan struct{}      // closed when every actor has returned

	// The session runs apart from the group and outlives it: the member
	// actor drains (its consumer acks the final Update) while the claims,
	// which go with the session, are still held.
	sessExited  chan struct{}      // closed when the session actor has returned
	stopSession context.CancelFunc // stops it; set by run before the actors start
	sessErr     error              // its error; read after sessExited
	err         error              // why the actors stopped; read after done
	result      error              // what Shutdown and Close return; read after done

	giveUpErr error // why the first shutdown to give up did; guarded by mu
}

// nameWaiter is a members actor that says whose session holds the
// member's name while it waits for it (see members.Actor.Waiting).
type nameWaiter interface {
	Waiting() error
}

var _ nameWaiter = (*members.Actor)(nil)

// New validates cfg and returns an allocator. It does no I/O and starts
// no goroutine. A bad config is an error wrapping [ErrInvalidConfig] that
// names the field.
func New(cfg Config) (*Allocator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("group", cfg.Group, "member", cfg.Member)
	clock := actor.RealClock()
	var acts seam.Actors
	if cfg.backend != nil {
		acts = cfg.backend(seam.Config{
			Member:         cfg.Member,
			Seed:           cfg.Partitions,
			Seats:          cfg.DepartureDelay > 0,
			SessionTimeout: cfg.SessionTimeout,
			Logger:         log,
			Sticky:         cfg.Strategy == rebalance.StickyStrategy,
			Weight:         cfg.Weight,
		})
	} else {
		acts = zkActors(cfg, log, clock)
	}
	reb := newShell(shellConfig{
		core: decision.Config{
			Member:          cfg.Member,
			Settle:          cfg.Settle,
			ReleaseTimeout:  cfg.ReleaseTimeout,
			DisconnectGrace: cfg.DisconnectGrace,
			DepartureDelay:  cfg.DepartureDelay,
		},
		strategy:   cfg.Strategy,
		assigner:   acts.Assigner,
		session:    acts.Session.Observe(),
		members:    acts.Members.Views(),
		partitions: acts.Partitions.Views(),
		want:       acts.Claims.Want(),
		held:       acts.Claims.Held(),
		expire:     acts.Members.Expire,
		observer:   acts.Observer,
		logger:     log,
		clock:      clock,
	})
	a := &Allocator{cfg: cfg, sess: acts.Session, set: acts.Partitions, reb: reb, done: make(chan struct{})}
	a.names, _ = acts.Members.(nameWaiter)
	a.sessExited = make(chan struct{})
	a.group.Add("session", actor.Func(a.watchSession))
	a.group.Add("membership", acts.Members)
	a.group.Add("partitions", acts.Partitions)
	// The claims actor outlives the group's context until the member
	// loop has drained: once the consumer has acked the Update that
	// revokes everything, the drain releases the claims and their hold
	// records through it, so that the next owners take the partitions
	// without reading each record of an ended session.
	claimsCtx, stopClaims := context.WithCancel(context.Background())
	a.group.Add("claims", actor.Func(func(ctx context.Context) error {
		defer stopClaims()
		return acts.Claims.Run(claimsCtx)
	}))
	a.group.Add("rebalance", actor.Func(func(ctx context.Context) error {
		defer a.stopSession() // drained: see run
		defer stopClaims()
		return reb.Run(ctx)
	}))
	return a, nil
}

// Start connects to ZooKeeper, joins the group and merges the seed
// partitions, and returns once the first [Update] is available on
// [Allocator.Updates]. If ctx ends first, or the group's members run
// another strategy ([ErrStrategyMismatch]; Start reads a few of their
// nodes before joining), Start closes the allocator and returns the
// error. Start may be called once.
//
// If the member's name is held by another live session, Start waits for
// that session to end, for as long as ctx allows: a member killed and
// restarted at once finds its name held by its crashed run's session
// until the server expires it, within that session's timeout. Start
// logs the holder once, at Warn (its session, and the host, pid and
// start time its node records). With [Config.DepartureDelay] longer
// than that timeout, such a restart moves no partition: the member gets
// its own back. If ctx ends while the name is still held, the error
// wraps [ErrDuplicateMember], names the holder, and wraps ctx's error.
//
// Every error of a ctx that ended says what Start was waiting for, and
// wraps ctx's error: with no session up, it names the servers and wraps
// the last connection error (for example "dial tcp 127.0.0.1:2181:
// connect: connection refused"); with one, it names the holder of the
// name, wraps the strategy's last failure (its error or panic, which
// names the strategy), says "strategy S has not returned after D" while
// a run is under way, or names the view it waits for.
func (a *Allocator) Start(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	if a.started {
		a.mu.Unlock()
		return ErrStarted
	}
	a.started = true
	began := time.Now()
	runCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.mu.Unlock()

	go a.run(runCtx)

	select {
	case <-a.reb.Ready():
		return nil
	case <-a.done:
		if a.err != nil {
			return fmt.Errorf("zkalloc: start: %w", a.err)
		}
		return ErrClosed
	case <-ctx.Done():
		// Read before Close, whose shutdown fails connections itself and
		// ends the waits.
		up, last := a.sess.Failure()
		waiting := a.waiting()
		_ = a.shutdown(ctx, "start") // at once: Start's error says why
		if up {
			return fmt.Errorf("zkalloc: start: no first assignment after %v: %w: %w", time.Since(began).Round(10*time.Millisecond), waiting, ctx.Err())
		}
		why := fmt.Sprintf("zkalloc: start: no session with %s after %v", strings.Join(a.cfg.Servers, ","), time.Since(began).Round(10*time.Millisecond))
		if last != nil {
			return fmt.Errorf("%s: %w: %w", why, last, ctx.Err())
		}
		return fmt.Errorf("%s: %w", why, ctx.Err())
	}
}

// waiting says what Start waits for with a session up: the member's
// name, or the member loop's first Update.
func (a *Allocator) waiting() error {
	if a.names != nil {
		if err := a.names.Waiting(); err != nil {
			return err
		}
	}
	if err := a.reb.Waiting(); err != nil {
		return err
	}
	return errors.New("the first assignment was published as Start gave up")
}

// run runs the actors until they stop, then records why. An error after
// Start has returned is logged: nobody may be waiting for it but the
// consumer, who sees Updates close and gets it from Close.
func (a *Allocator) run(ctx context.Context) {
	// The member loop (shell) returns once it has drained (its consumer acked
	// the Update revoking everything, or ReleaseTimeout passed): from then
	// on the claims may go with the session, so it calls stopSession. Doing
	// so then, not after every actor has returned, also fails the requests
	// that wait for a connection, which the other actors may be blocked in
	// while the network is dark for good.
	sessCtx, stopSession := context.WithCancel(context.Background())
	a.stopSession = stopSession
	defer stopSession()
	if ctx.Err() != nil {
		stopSession() // closed before Start: no connection at all
	}
	go func() {
		defer close(a.sessExited)
		a.sessErr = a.sess.Run(sessCtx)
	}()
	var metricsDone chan struct{}
	stopMetrics := make(chan struct{})
	if a.cfg.Metrics != nil {
		metricsDone = make(chan struct{})
		go func() {
			defer close(metricsDone)
			a.reportMetrics(stopMetrics)
		}()
	}
	err := a.group.Run(ctx)
	stopSession()
	<-a.sessExited
	close(stopMetrics)
	if metricsDone != nil {
		<-metricsDone
	}
	select {
	case <-a.reb.Ready():
		if err != nil {
			a.cfg.Logger.Error("zkalloc: allocator stopped", "group", a.cfg.Group, "member", a.cfg.Member, "err", err)
		}
	default: // Start returns err itself
	}
	a.err = err
	a.result = a.outcome()
	close(a.done)
}

// outcome returns what Shutdown and Close return, once the actors have
// stopped: the error that stopped them, if one did, and why the drain
// ended without the consumer's ack, if it did after a shutdown gave up
// or (if nothing else stopped the allocator) after its own bound.
func (a *Allocator) outcome() error {
	var drain error
	switch a.reb.DrainEnd() {
	case decision.DrainGaveUp:
		a.mu.Lock()
		drain = a.giveUpErr
		a.mu.Unlock()
	case decision.DrainTimedOut:
		if a.err == nil {
			drain = fmt.Errorf("zkalloc: shutdown: consumer did not ack the final Update within ReleaseTimeout (%v) of receiving it: %w", a.cfg.ReleaseTimeout, context.DeadlineExceeded)
		}
	}
	switch {
	case drain == nil:
		return a.err
	case a.err == nil:
		return drain
	}
	return fmt.Errorf("%w; and %w", a.err, drain)
}

// watchSession stands for the session in the group: it returns the
// session actor's error when it stops by itself, which stops the others.
func (a *Allocator) watchSession(ctx context.Context) error {
	select {
	case <-a.sessExited:
		return a.sessErr
	case <-ctx.Done():
		return nil
	}
}

// Updates delivers this member's assignment. Delivery is latest-wins: a
// slow reader receives the newest snapshot (whose Added and Revoked cover
// everything since the last one it received), never a stale one, and
// never holds up the allocator. The channel is closed when the allocator
// has stopped, after Shutdown or Close or on a fatal error (which Close
// returns). The last Update revokes everything, unless the allocator
// stopped before the consumer took it (Shutdown's ctx ended, or the
// session had ended on the server): when the channel closes, stop
// whatever still runs.
func (a *Allocator) Updates() <-chan Update { return a.reb.Updates() }

// Current returns the newest computed snapshot, received from Updates or
// not; the zero Update before the first. It is for looking, not for
// consuming: the hand-off counts a partition as in use by the consumer
// from the Update that Updates delivered with it, so start partitions
// from what Updates delivers. Acking an Update taken from here is safe.
func (a *Allocator) Current() Update {
	u, _ := a.reb.Current()
	return u
}

// AddPartitions merges partitions into the group's shared set and returns
// once ZooKeeper has them; every member's assignment follows. Topic names
// and IDs are checked as in [Config.Partitions]. If no session is up, it
// waits for one until ctx ends.
func (a *Allocator) AddPartitions(ctx context.Context, parts map[string][]int32) error {
	if err := a.ready(); err != nil {
		return err
	}
	return a.translate(a.set.Add(ctx, parts))
}

// RemovePartitions takes partitions out of the group's shared set, like
// [Allocator.AddPartitions]. Removing partitions that are not in the set
// is not an error.
func (a *Allocator) RemovePartitions(ctx context.Context, parts map[string][]int32) error {
	if err := a.ready(); err != nil {
		return err
	}
	return a.translate(a.set.Remove(ctx, parts))
}

func (a *Allocator) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		return ErrNotStarted
	}
	return nil
}

func (a *Allocator) translate(err error) error {
	if errors.Is(err, actor.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Shutdown hands this member's partitions over and leaves the group,
// waiting for the consumer until ctx ends. It publishes a final Update
// that revokes every partition ([RevokeShutdown]; Current shows nothing
// assigned from then on) and waits until the consumer has acked it,
// keeping the claims meanwhile so that no other member starts a
// partition this consumer is still stopping. Then it closes the
// ZooKeeper session (the server deletes this member's nodes at once, so
// the others take over without waiting for a session timeout), and
// returns when every goroutine of the allocator has exited and Updates
// is closed. So call Shutdown while the consumer still reads Updates,
// from another goroutine, and let the consumer stop its partitions and
// Ack the final Update as it does any other.
//
// If ctx ends before the ack, Shutdown stops waiting: it closes the
// session at once, so the partitions go to the other members while the
// consumer may still work on them (logged as an error), and returns an
// error wrapping ctx's error; Updates may then close before the consumer
// has received the final Update, so a consumer stops whatever it still
// runs when Updates closes. With a ctx that has already ended it
// returns as soon as the allocator has stopped, having waited for no
// ack. However long ctx is, the wait ends as a hand-off's does, so that
// a consumer that never acks cannot stall the group: ReleaseTimeout
// after the consumer received the final Update, twice ReleaseTimeout
// after Shutdown if it never does; the error then wraps
// [context.DeadlineExceeded]. Nor does it wait once the session has
// ended on the server (the claims are gone with it). A fatal error ends
// the same way, waiting as long.
//
// Shutdown returns nil if the consumer acked (or had no partitions), and
// otherwise the error that stopped the allocator, if one did, and why
// the wait ended without the ack; both if both. Calling Shutdown or
// Close again returns the same; each call returns once the allocator has
// stopped, and the first ctx to end stops the wait for all. Shutdown
// before Start leaves the allocator closed: Start then returns
// [ErrClosed].
func (a *Allocator) Shutdown(ctx context.Context) error {
	return a.shutdown(ctx, "shutdown")
}

// Close is [Allocator.Shutdown] with a ctx that ends ReleaseTimeout
// after the call: it waits at most that long for the consumer's ack of
// the final Update, then closes the session and returns once the
// allocator has stopped. It returns nil if the consumer acked, and
// otherwise the error that stopped the allocator, or one wrapping
// [context.DeadlineExceeded] if the consumer did not ack in time (its
// partitions have gone to other members). Calling Close or Shutdown
// again returns the same.
func (a *Allocator) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ReleaseTimeout)
	defer cancel()
	return a.shutdown(ctx, "close")
}

// shutdown is Shutdown for the method named by verb.
func (a *Allocator) shutdown(ctx context.Context, verb string) error {
	a.mu.Lock()
	if !a.started {
		// Run the actors on a cancelled context: each returns at once and
		// closes its outputs, so Updates is closed like after a Start.
		a.started = true
		runCtx, cancel := context.WithCancel(context.Background())
		cancel()
		a.cancel = cancel
		go a.run(runCtx)
	}
	a.closed = true
	a.cancel()
	a.mu.Unlock()
	select {
	case <-a.done:
	case <-ctx.Done():
		a.mu.Lock()
		if a.giveUpErr == nil {
			what := "stopped waiting for the consumer's ack of the final Update"
			if verb == "close" {
				what = fmt.Sprintf("consumer did not ack the final Update within ReleaseTimeout (%v)", a.cfg.ReleaseTimeout)
			}
			a.giveUpErr = fmt.Errorf("zkalloc: %s: %s: %w", verb, what, ctx.Err())
		}
		a.mu.Unlock()
		a.reb.GiveUp()
		<-a.done
	}
	return a.result
}
