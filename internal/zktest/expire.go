package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// ExpireSession makes the server at addr end the session sessionID at
// once, as if it had expired: it attaches to the session with its
// password over a connection of its own, as a client that moved servers
// would, and closes it. The server then deletes the session's ephemeral
// nodes and tells its client, on its next contact, that the session has
// expired. The ID and password come from the session under test (see
// zksession.Session.Credentials).
//
// The session's own client may attach again in between (it reconnects at
// once when the server closes its connection for ours), so ExpireSession
// attaches and closes until the server answers that the session is gone,
// or ctx ends. It fails if the server does not know the session to begin
// with. ExpireSession is safe for concurrent use.
func ExpireSession(ctx context.Context, addr string, sessionID int64, passwd []byte) error {
	if len(passwd) == 0 {
		return errors.New("zktest: expire session: no password")
	}
	ctx, cancel := zklaunch.WithDefaultDeadline(ctx, 10*time.Second)
	defer cancel()
	for closed := false; ; {
		known, err := closeSession(ctx, addr, sessionID, passwd)
		switch {
		case err == nil && !known && !closed:
			return fmt.Errorf("zktest: expire session %#x: the server did not attach to it (already expired?)", sessionID)
		case err == nil && !known:
			return nil // gone: closed by us, perhaps after its client attached again
		case err == nil:
			closed = true
		default:
			select {
			case <-ctx.Done():
				return fmt.Errorf("zktest: expire session %#x: %w", sessionID, err)
			case <-time.After(10 * time.Millisecond): // a retry's pace, as the client attaches again
			}
		}
	}
}

// closeSession attaches to the session over a connection of its own and,
// if the server knows it, closes it; known reports whether it did. An
// error is a connection the server closed or reset on the way, as it does
// when the session's own client attaches again meanwhile.
func closeSession(ctx context.Context, addr string, sessionID int64, passwd []byte) (known bool, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}

	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd (length-prefixed), then the read-only flag.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 30000)
	req = binary.BigEndian.AppendUint64(req, uint64(sessionID))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if err := writeFrame(conn, req); err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	resp, err := readFrame(conn)
	if err != nil {
		return false, fmt.Errorf("connect reply: %w", err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != sessionID {
		return false, nil
	}

	// closeSession: a request header only, xid 1, type -11.
	closeReq := binary.BigEndian.AppendUint32(nil, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(0xFFFFFFF5)) // -11
	if err := writeFrame(conn, closeReq); err != nil {
		return true, nil // whether it arrived, the next attach tells
	}
	// The reply header: xid, zxid, err. The server may close the
	// connection with the session instead; either way the next attach
	// tells whether the session is gone.
	for {
		reply, err := readFrame(conn)
		if err != nil || len(reply) >= 16 && int32(binary.BigEndian.Uint32(reply[0:4])) == 1 {
			return true, nil
		}
	}
}

func writeFrame(w io.Writer, body []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	body := make([]byte, size)
	_, err := io.ReadFull(r, body)
	return body, err
}
