package actor

import "sync"

// Latest is a one-reader mailbox that keeps only the newest value. Set
// never blocks, so one producer can feed several readers (one Latest each)
// without any of them holding it up; the reader selects on
// [Latest.Changed] and then calls [Latest.Take]. A value replaced before it
// was taken is lost on purpose: values must be full snapshots.
//
// Latest is safe for concurrent use. The zero value is not usable; call
// [NewLatest].
type Latest[T any] struct {
	mu      sync.Mutex
	value   T
	has     bool
	changed chan struct{}
}

// NewLatest returns an empty cell.
func NewLatest[T any]() *Latest[T] {
	// One slot: Set records "there is something new" without blocking and
	// without losing that fact when the reader is busy.
	return &Latest[T]{changed: make(chan struct{}, 1)}
}

// Set replaces the value and wakes the reader.
func (l *Latest[T]) Set(v T) {
	l.mu.Lock()
	l.value, l.has = v, true
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Changed receives after Set; then call Take.
func (l *Latest[T]) Changed() <-chan struct{} { return l.changed }

// Take returns the newest value not yet taken and true, or the zero value
// and false if there is none.
func (l *Latest[T]) Take() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.value, l.has
	var zero T
	l.value, l.has = zero, false
	return v, ok
}
