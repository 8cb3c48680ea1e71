package session

import (
	"fmt"
	"time"
)

// Status is the condition of the session.
type Status int

const (
	// Connecting: no session has been established yet.
	Connecting Status = iota
	// Up: the session is established and the connection works.
	Up
	// Suspended: the connection is lost; the session may still be alive on
	// the server and may resume.
	Suspended
	// Lost: the session expired, was replaced by a new one, or may expire
	// at any moment; its ephemeral nodes must be taken as gone.
	Lost
	// Closed: the session actor has stopped.
	Closed
)

// String returns the status in lower case: "connecting", "up",
// "suspended", "lost" or "closed".
func (s Status) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Up:
		return "up"
	case Suspended:
		return "suspended"
	case Lost:
		return "lost"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// State is one snapshot of the session, as its owner publishes it. It is
// a value: nothing in it changes after it is published. It carries no
// connection: the decisions made on it need none.
type State struct {
	Status Status
	// SessionID is the current session when Up, the one that may resume
	// when Suspended, and the one that is gone when Lost; 0 if none.
	SessionID int64
	// Reconnects counts how many times the session has come Up; it grows
	// with every (re)connection, even one that resumed the same session.
	Reconnects uint64
	// Since is when this status began.
	Since time.Time
	// Timeout is the session timeout the server granted (the requested one
	// until the first session is established).
	Timeout time.Duration
	// LastReply is when the server last answered one of our requests.
	LastReply time.Time
	// Ended, with Lost, says the session has ended on the server: it
	// expired (or something closed it there, which the client sees as an
	// expiry), or a new session replaced it, and its ephemeral nodes are
	// gone. Lost without Ended is this member's lease running out: the
	// server may still hold the session and its ephemeral nodes, and may
	// let it resume. A session Lost by its lease that then turns out to
	// have ended is published again, Lost with Ended. Ended is false in
	// every other status.
	Ended bool
}

// NewConnection reports whether st is Up on another connection than prev
// was: a new session, or the same one resumed. What failed or was watched
// on the old connection says nothing of this one.
func (st State) NewConnection(prev State) bool {
	return st.Status == Up && st.Reconnects != prev.Reconnects
}
