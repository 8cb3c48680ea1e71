package actor

import (
	"context"
	"errors"
	"fmt"
)

// ErrClosed is returned by [Send] and [Call] when the receiving actor has
// stopped.
var ErrClosed = errors.New("actor: closed")

// Actor is one concurrent concern. Run executes in the caller's goroutine,
// returns when ctx is cancelled or the actor fails, and must not return
// before every goroutine it started has exited. A Run that returns because
// ctx was cancelled returns nil or ctx.Err().
type Actor interface {
	Run(ctx context.Context) error
}

// Func adapts a function to [Actor].
type Func func(ctx context.Context) error

// Run calls f(ctx).
func (f Func) Run(ctx context.Context) error { return f(ctx) }

// Send delivers msg to inbox. It returns [ErrClosed] once done is closed
// (the receiver has stopped) and ctx.Err() once ctx is done, so a sender
// never blocks past the receiver's shutdown.
func Send[M any](ctx context.Context, done <-chan struct{}, inbox chan<- M, msg M) error {
	select {
	case inbox <- msg:
		return nil
	case <-done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Call sends a request built around a fresh one-slot reply channel and
// waits for the answer. The slot lets the receiver answer without blocking
// even if the caller has given up. Like [Send], it returns [ErrClosed] or
// ctx.Err() instead of blocking past shutdown.
func Call[M, R any](ctx context.Context, done <-chan struct{}, inbox chan<- M, build func(reply chan<- R) M) (R, error) {
	reply := make(chan R, 1) // one slot: the receiver never blocks on a caller that left
	var zero R
	if err := Send(ctx, done, inbox, build(reply)); err != nil {
		return zero, err
	}
	select {
	case r := <-reply:
		return r, nil
	case <-done:
		// The receiver may have answered just before stopping.
		select {
		case r := <-reply:
			return r, nil
		default:
			return zero, ErrClosed
		}
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// panicError turns a recovered panic value into an error.
func panicError(name string, v any) error {
	return fmt.Errorf("actor %s panicked: %v", name, v)
}
