// Package zkwatch turns ZooKeeper's one-shot watch channels into messages
// on a single channel that an actor can select on, with every goroutine
// owned and waited for.
package zkwatch

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// Fired says that the watch registered under Key fired with Event. Event
// is the zero Event if another reader of the channel took it first (the
// client closes a watch's channel after its one event): the watch has
// fired all the same.
type Fired struct {
	Key   string
	Event zk.Event
}

// Set forwards watch events to [Set.C]. Each watch is waited on by one
// goroutine, which ends when its watch fires (or is closed by the client)
// and the event is taken, or when [Set.Reset] or [Set.Close] is called.
// Add, Reset and Close are meant for the one actor that owns the Set and
// reads C; they must not be called while that actor would have to read C
// to let them finish (they never do: both stop the goroutines first).
type Set struct {
	out  chan Fired
	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns an empty set.
func New() *Set {
	return &Set{out: make(chan Fired), stop: make(chan struct{})}
}

// C delivers fired watches. It is never closed.
func (s *Set) C() <-chan Fired { return s.out }

// Add waits on ch, a watch channel from the client, under key. A nil ch is
// ignored.
func (s *Set) Add(key string, ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	stop := s.stop
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case ev := <-ch:
			// ev is zero if the channel was closed without one: another
			// reader took the event (a view's Outdated check, or the
			// owner's own look), but the watch has fired all the same.
			select {
			case s.out <- Fired{Key: key, Event: ev}:
			case <-stop:
			}
		case <-stop:
		}
	}()
}

// Reset stops waiting on every watch added so far and returns when their
// goroutines have exited. Use it before re-arming all watches. Events not
// yet delivered are dropped; the caller re-reads state after a Reset.
func (s *Set) Reset() {
	close(s.stop)
	s.wg.Wait()
	s.stop = make(chan struct{})
}

// Close stops every goroutine and waits for them. The set may be reused
// afterwards, as after Reset.
func (s *Set) Close() { s.Reset() }

// AnyFired returns a check of whether one of watches, the watch channels
// a reading armed, has fired; nil channels are ignored. The check never
// blocks, and may take a fired watch's event: a select on the channel,
// or a [Set] forwarding it, sees the channel closed all the same. The
// views the actors publish carry it (membership.View.Changed,
// partitions.View.Changed).
func AnyFired(watches ...<-chan zk.Event) func() bool {
	return func() bool {
		for _, ch := range watches {
			select {
			case <-ch:
				return true
			default:
			}
		}
		return false
	}
}
