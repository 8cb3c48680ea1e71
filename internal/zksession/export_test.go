package zksession

// InFlight returns how many requests the session's connection let through
// to the client in the current session that have not returned yet.
func InFlight(s *Session) int {
	s.link.mu.Lock()
	defer s.link.mu.Unlock()
	return s.link.inside
}

// ClientPause is the client's pause before a new round of dials.
const ClientPause = clientPause

// Record makes s keep every state it publishes, in order, and returns a
// function that returns them so far: every state a subscriber has seen,
// as s records each one before it hands it to its subscribers. Call it
// before Run.
func Record(s *Session) func() []State {
	r := &recorder{}
	s.subs = append([]stateSink{r}, s.subs...)
	return func() []State {
		r.mu.Lock()
		defer r.mu.Unlock()
		return append([]State(nil), r.states...)
	}
}

// LeaseFraction is the part of the session timeout the lease lasts.
const LeaseFraction = leaseFraction
