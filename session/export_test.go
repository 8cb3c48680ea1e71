package session

// InFlight returns how many requests the session's connection let through
// to the client in the current session that have not returned yet.
func InFlight(s *Session) int {
	s.link.mu.Lock()
	defer s.link.mu.Unlock()
	return s.link.inside
}

// ClientPause is the client's pause before a new round of dials.
const ClientPause = clientPause
