package actor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Group runs actors together, in the manner of oklog/run: the first actor
// to return, with or without an error, cancels the others, and [Group.Run]
// returns only after all of them have returned.
//
// A Group is configured with [Group.Add] before Run and is not safe for
// concurrent configuration; Run may be called once.
type Group struct {
	actors []entry
}

type entry struct {
	name  string
	actor Actor
}

// Add schedules a to run under name when [Group.Run] is called. The name
// appears in errors.
func (g *Group) Add(name string, a Actor) {
	g.actors = append(g.actors, entry{name: name, actor: a})
}

// Run starts every actor in its own goroutine and blocks until all have
// returned. The first actor to return cancels the context given to the
// others, as does ctx. Run returns the first error that is not the result
// of that cancellation, prefixed with the actor's name if it does not
// start with it already, or nil. A panic in
// an actor is recovered and reported as its error.
func (g *Group) Run(ctx context.Context) error {
	if len(g.actors) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		name string
		err  error
	}
	// One slot per actor: each goroutine sends exactly once and then exits,
	// whether or not Run is still reading.
	results := make(chan result, len(g.actors))
	var wg sync.WaitGroup
	for _, m := range g.actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- result{name: m.name, err: runSafely(ctx, m)}
		}()
	}

	var first error
	for range g.actors {
		r := <-results
		cancel()
		if first == nil && r.err != nil && !isCancellation(ctx, r.err) {
			first = named(r.name, r.err)
		}
	}
	wg.Wait()
	return first
}

// named prefixes err with the actor's name unless its message already
// starts with it (errors of the actor's own package usually do).
func named(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+":") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

func runSafely(ctx context.Context, m entry) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(m.name, v)
		}
	}()
	return m.actor.Run(ctx)
}

// isCancellation reports whether err only says that ctx was cancelled.
func isCancellation(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
