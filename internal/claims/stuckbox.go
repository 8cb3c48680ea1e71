package claims

import (
	"sync"

	"github.com/zkalloc/zkalloc/internal/decision"
)

// StuckBox carries [decision.Stuck] reports from the member's loop to
// the claims actor. Put never blocks and drops nothing, unlike a
// latest-wins cell: each report is an event, logged once. Reports are few
// (at most one per holding session each time claims get stuck), and the
// claims actor takes them all at once, so the box stays small. Safe for
// concurrent use.
type StuckBox struct {
	mu      sync.Mutex
	pending []decision.Stuck
	wake    chan struct{}
}

// NewStuckBox returns an empty box.
func NewStuckBox() *StuckBox {
	// One slot: Put records "there is something" without blocking.
	return &StuckBox{wake: make(chan struct{}, 1)}
}

// Put adds reports and wakes the reader.
func (b *StuckBox) Put(s ...decision.Stuck) {
	if len(s) == 0 {
		return
	}
	b.mu.Lock()
	b.pending = append(b.pending, s...)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Changed receives after Put; then call Take.
func (b *StuckBox) Changed() <-chan struct{} { return b.wake }

// Take returns every report not yet taken, oldest first.
func (b *StuckBox) Take() []decision.Stuck {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.pending
	b.pending = nil
	return s
}
