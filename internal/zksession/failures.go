package zksession

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// warnEvery bounds how often failures to reach a server are logged at
// WARN: a client that cannot connect retries about once a second, so the
// others go to DEBUG.
const warnEvery = 10 * time.Second

// failures keeps why the client could not reach a server, for the caller
// waiting for a session ([Session.Failure]) and for the log. The client
// dials and reads on its own goroutines; the session's Run notes when a
// session is up.
type failures struct {
	logger *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	last     error     // the last failure since a session was last up
	up       bool      // a session is up
	stopped  bool      // shutdown has begun: what fails now is our doing
	warned   time.Time // when a failure was last logged at WARN; zero if never
	unwarned int       // failures since then not logged at WARN
}

// failed records that server could not be reached, or did not answer the
// connect request, and logs it: at WARN unless one was within warnEvery,
// then with the count of failures logged at DEBUG since ("suppressed").
func (f *failures) failed(server string, err error) {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.last = err
	now := f.now()
	warn := f.warned.IsZero() || now.Sub(f.warned) >= warnEvery
	var since int
	if warn {
		f.warned, since, f.unwarned = now, f.unwarned, 0
	} else {
		f.unwarned++
	}
	f.mu.Unlock()
	if warn {
		f.logger.Warn(msgFailed, "server", server, "err", err, "suppressed", since)
	} else {
		f.logger.Debug(msgFailed, "server", server, "err", err)
	}
}

const msgFailed = "zkalloc: cannot connect to ZooKeeper; retrying"

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
