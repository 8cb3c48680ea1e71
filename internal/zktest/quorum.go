package zktest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// errBindFailed reports a server that could not bind one of its ports.
var errBindFailed = errors.New("zktest: server could not bind its port")

// pollInterval paces leader polls.
const pollInterval = 25 * time.Millisecond

// Leader returns the index of the current leader: the one running member
// that reports "Mode: leader". It polls until there is one, for example
// while the members elect a new leader after the old one was stopped.
// ctx bounds the wait (two minutes if it has no deadline). Leader is safe
// for concurrent use.
func (e *Ensemble) Leader(ctx context.Context) (int, error) {
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, zklaunch.DefaultWait)
	defer cancel()
	leader := -1
	err := e.waitFor(ctx, false, func(modes []string) bool {
		leader = zklaunch.SoleLeader(modes)
		return leader >= 0
	})
	return leader, err
}

// WaitServing waits until a quorum serves clients: exactly one running
// member is the leader, and the leader and its followers are a majority of
// the ensemble. Use it after stopping or starting members. ctx bounds the
// wait (two minutes if it has no deadline). WaitServing is safe for
// concurrent use.
func (e *Ensemble) WaitServing(ctx context.Context) error {
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, zklaunch.DefaultWait)
	defer cancel()
	return e.waitFor(ctx, false, quorumServing)
}

// quorumServing reports whether modes show a leader with a majority.
func quorumServing(modes []string) bool {
	if zklaunch.SoleLeader(modes) < 0 {
		return false
	}
	serving := 0
	for _, m := range modes {
		if m == zklaunch.ModeLeader || m == zklaunch.ModeFollower {
			serving++
		}
	}
	return serving > len(modes)/2
}

// waitFor polls the members' modes until cond holds or ctx ends. If
// needAll, a member that is not running or failed to bind a port fails the
// wait at once, since cond can then never hold.
func (e *Ensemble) waitFor(ctx context.Context, needAll bool, cond func(modes []string) bool) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		modes, err := e.modes(ctx, needAll)
		if err != nil {
			return err
		}
		if cond(modes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: ensemble modes %q: %w", modes, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// modes asks every running member for its `srvr` mode. A member that is
// stopped, not serving or not answering has mode "". If needAll, a member
// that is not running or failed to bind a port is an error.
func (e *Ensemble) modes(ctx context.Context, needAll bool) ([]string, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, zklaunch.ErrClosed
	}
	addrs := make([]string, len(e.members))
	for i, m := range e.members {
		switch {
		case needAll && !m.running():
			e.mu.Unlock()
			return nil, fmt.Errorf("zktest: %s: %w", m.name, zklaunch.ErrExited)
		case needAll && m.proc.BindFailed():
			// It will exit, but only after retrying for seconds.
			e.mu.Unlock()
			return nil, fmt.Errorf("zktest: %s: %w", m.name, errBindFailed)
		case m.running():
			addrs[i] = m.addr()
		}
	}
	e.mu.Unlock()
	modes := make([]string, len(addrs))
	for i, a := range addrs {
		if a == "" {
			continue
		}
		modes[i], _ = zklaunch.Mode(ctx, a)
	}
	return modes, nil
}
