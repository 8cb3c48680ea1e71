package session

import (
	"fmt"
	"sync"
)

// failures keeps why the client could not reach a server, for the caller
// waiting for a session ([Session.Failure]). The client dials and reads on
// its own goroutines; the session's Run notes when a session is up.
type failures struct {
	mu      sync.Mutex
	last    error // the last failure since a session was last up
	up      bool  // a session is up
	stopped bool  // shutdown has begun: what fails now is our doing
}

// failed records that server could not be reached, or did not answer the
// connect request.
func (f *failures) failed(server string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.last = err
	}
}

// setUp notes whether a session is up; one that comes up clears the last
// failure.
func (f *failures) setUp(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up = up
	if up {
		f.last = nil
	}
}

func (f *failures) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

func (f *failures) snapshot() (up bool, last error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up, f.last
}

// handshakeError is a connection that failed before the server answered
// the connect request.
type handshakeError struct {
	server string
	err    error
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("no answer from %s to the connect request: %v", e.server, e.err)
}

func (e *handshakeError) Unwrap() error { return e.err }
