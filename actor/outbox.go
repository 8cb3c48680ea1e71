package actor

// Outbox is a latest-wins output of one actor. The actor [Outbox.Put]s
// full snapshots; a reader receives from [Outbox.C]. A slow reader never
// blocks the actor: a snapshot it has not taken yet is replaced by the
// newer one, so it always gets the newest value and never a stale one.
//
// The actor delivers from its own select loop with the nil-channel trick:
//
//	case o.Send() <- o.Pending():
//		o.Sent()
//
// Send returns nil, a case that never fires, while nothing is pending.
// Only the owning actor may call Put, Send, Pending, Sent and Close; C
// may be called from any goroutine. The zero value is not usable; call
// [NewOutbox].
type Outbox[T any] struct {
	ch      chan T
	pending T
	has     bool
}

// NewOutbox returns an empty outbox over an unbuffered channel.
func NewOutbox[T any]() *Outbox[T] {
	return &Outbox[T]{ch: make(chan T)}
}

// C is the reader's side. It is closed by [Outbox.Close].
func (o *Outbox[T]) C() <-chan T { return o.ch }

// Put replaces the pending snapshot with v.
func (o *Outbox[T]) Put(v T) {
	o.pending, o.has = v, true
}

// Pending returns the snapshot waiting for the reader, or the zero value
// when there is none ([Outbox.Has] tells which).
func (o *Outbox[T]) Pending() T { return o.pending }

// Has reports whether a snapshot is waiting for the reader.
func (o *Outbox[T]) Has() bool { return o.has }

// Send returns the channel to send [Outbox.Pending] on, or nil when
// nothing is pending.
func (o *Outbox[T]) Send() chan<- T {
	if !o.has {
		return nil
	}
	return o.ch
}

// Sent records that the pending snapshot was delivered.
func (o *Outbox[T]) Sent() {
	var zero T
	o.pending, o.has = zero, false
}

// Close closes the reader's channel; a pending snapshot is dropped. Call it
// once, after the actor's loop has exited.
func (o *Outbox[T]) Close() {
	o.Sent()
	close(o.ch)
}
