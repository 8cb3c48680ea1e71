package zklaunch

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// fourLetterWait bounds FourLetter when its context has no deadline.
const fourLetterWait = 10 * time.Second

// maxReply bounds a four-letter-word reply (`cons` or `wchc` on a busy
// server can be long, but not this long).
const maxReply = 4 << 20

// FourLetter sends ZooKeeper's four-letter admin word (ruok, srvr, stat,
// cons, wchs, mntr, envi, conf...) to the server at addr and returns its
// whole reply, read until the server closes the connection. Every word is
// enabled on servers started with a [Config] of this package. A server that is running but
// not serving (an ensemble member without a quorum) answers most words with
// "This ZooKeeper instance is not currently serving requests"; `ruok`
// answers "imok" whenever the server process is up.
//
// The call is bounded by ctx, and by 10 s if ctx has no deadline.
// FourLetter is safe for concurrent use.
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("zklaunch: four-letter word %q: want 4 bytes", word)
	}
	ctx, cancel := WithDefaultDeadline(ctx, fourLetterWait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("zklaunch: %s %s: %w", word, addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// Cancelling ctx interrupts the exchange at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("zklaunch: %s %s: %w", word, addr, err)
	}
	reply, err := io.ReadAll(io.LimitReader(conn, maxReply))
	if err != nil {
		return "", fmt.Errorf("zklaunch: %s %s: %w", word, addr, err)
	}
	return string(reply), nil
}

// Modes a server reports in its `srvr` reply (see [Mode]).
const (
	ModeLeader     = "leader"
	ModeFollower   = "follower"
	ModeStandalone = "standalone"
)

// Mode returns the mode the server at addr reports in its `srvr` reply
// ([ModeLeader], [ModeFollower], [ModeStandalone]), or "" if it is not
// serving. The call is bounded by ctx and by a second. Mode is safe for
// concurrent use.
func Mode(ctx context.Context, addr string) (string, error) {
	reply, err := probe(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	return parseMode(reply), nil
}

// probe is FourLetter with a short timeout of its own.
func probe(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return FourLetter(ctx, addr, word)
}

// parseMode returns the value of the "Mode:" line of a `srvr` or `stat`
// reply, or "" if there is none (a server that is not serving).
func parseMode(reply string) string {
	for line := range strings.Lines(reply) {
		if v, ok := strings.CutPrefix(line, "Mode:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
