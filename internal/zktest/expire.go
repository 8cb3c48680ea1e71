package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ExpireSession makes the server at addr end the session sessionID at
// once, as if it had expired: it attaches to the session with its
// password over a connection of its own, as a client that moved servers
// would, and closes it. The server then deletes the session's ephemeral
// nodes and tells its client, on its next contact, that the session has
// expired. The ID and password come from the session under test (see
// session.Session.Credentials). ExpireSession is safe for concurrent use.
func ExpireSession(ctx context.Context, addr string, sessionID int64, passwd []byte) error {
	if len(passwd) == 0 {
		return errors.New("zktest: expire session: no password")
	}
	ctx, cancel := withDefaultDeadline(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
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
		return fmt.Errorf("zktest: expire session: connect: %w", err)
	}
	resp, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("zktest: expire session: connect reply: %w", err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != sessionID {
		return fmt.Errorf("zktest: expire session %#x: the server did not attach to it (already expired?)", sessionID)
	}

	// closeSession: a request header only, xid 1, type -11.
	closeReq := binary.BigEndian.AppendUint32(nil, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(0xFFFFFFF5)) // -11
	if err := writeFrame(conn, closeReq); err != nil {
		return fmt.Errorf("zktest: expire session: close: %w", err)
	}
	// The reply header: xid, zxid, err.
	for {
		reply, err := readFrame(conn)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the server closed the connection with the session
			}
			return fmt.Errorf("zktest: expire session: close reply: %w", err)
		}
		if len(reply) >= 16 && int32(binary.BigEndian.Uint32(reply[0:4])) == 1 {
			if code := int32(binary.BigEndian.Uint32(reply[12:16])); code != 0 {
				return fmt.Errorf("zktest: expire session: close failed with code %d", code)
			}
			return nil
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
