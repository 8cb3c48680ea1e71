package zktest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Ephemerals returns the ephemeral nodes the server at addr holds, each
// with the session that owns it, as its `dump` four-letter word lists
// them. On an ensemble's leader this is the moment a session's expiry
// takes effect: the leader alone expires sessions, and drops their nodes
// from its own tree as soon as the quorum has logged the close. ctx
// bounds the call (10 s if it has no deadline). Ephemerals is safe for
// concurrent use.
func Ephemerals(ctx context.Context, addr string) (map[string]int64, error) {
	reply, err := FourLetter(ctx, addr, "dump")
	if err != nil {
		return nil, err
	}
	return parseEphemerals(reply)
}

// parseEphemerals reads the "Sessions with Ephemerals" part of a `dump`
// reply: a line "0x<session>:" per session, then one tab-indented line per
// path.
func parseEphemerals(reply string) (map[string]int64, error) {
	const header = "Sessions with Ephemerals"
	_, body, ok := strings.Cut(reply, header)
	if !ok {
		return nil, fmt.Errorf("zktest: dump: no %q in %q", header, reply)
	}
	out := map[string]int64{}
	var session int64
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		if i == 0 {
			continue // the rest of the header line: " (n):"
		}
		switch {
		case strings.HasPrefix(line, "0x") && strings.HasSuffix(line, ":"):
			id, err := strconv.ParseUint(strings.TrimSuffix(line[2:], ":"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("zktest: dump: session line %q: %w", line, err)
			}
			session = int64(id)
		case strings.HasPrefix(line, "\t"):
			if session == 0 {
				return nil, fmt.Errorf("zktest: dump: path %q before any session", line)
			}
			out[strings.TrimSpace(line)] = session
		default:
			return out, nil // the next part of the dump
		}
	}
	return out, nil
}
