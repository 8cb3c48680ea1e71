package zktest

import (
	"encoding/binary"
	"io"
	"strconv"
	"testing"
)

// Request is one request a ZooKeeper client sent through a tapped
// [Proxy] (see [NewTappedProxy]).
type Request struct {
	// Op names the request as ZooKeeper's protocol does: "create",
	// "delete", "exists", "getData", "setData", "getChildren",
	// "getChildren2", "sync", "check", "multi", "ping", "setAuth",
	// "setWatches", "closeSession"...; "op<code>" for a code it does not
	// name.
	Op string
	// Path is the path the request names; a multi's is its first
	// operation's. "" for a request that names none (ping, setAuth,
	// setWatches, closeSession).
	Path string
}

// opNames are ZooKeeper's request op codes (ZooDefs.OpCode).
var opNames = map[int32]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
	6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync", 11: "ping",
	12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
	16: "reconfig", 19: "createContainer", 21: "createTTL", 22: "multiRead",
	100: "setAuth", 101: "setWatches", 105: "setWatches2", 106: "addWatch",
	-11: "closeSession",
}

// pathless are the requests whose body does not start with a path.
var pathless = map[string]bool{"ping": true, "setAuth": true, "setWatches": true, "setWatches2": true, "closeSession": true, "reconfig": true, "multi": true, "multiRead": true}

// NewTappedProxy is [NewProxy] with a tap: tap is called with every
// request a ZooKeeper client sends through the proxy, as the proxy
// forwards it, before the server can answer it (a request dropped by a
// black hole is not seen). The
// first message of each connection, the session handshake, is not a
// request. tap is called from the proxy's goroutines, one per
// connection, so it must be safe for concurrent use, and it must not
// block: the connection waits for it.
//
// A tap counts what a client asks of the servers without a hook in the
// client: give the client [Proxy.Addrs] as its servers.
func NewTappedProxy(tap func(Request), targets ...string) (*Proxy, error) {
	return newProxy(proxyOptions{tap: tap}, targets...)
}

// StartTappedProxy is [StartProxy] for [NewTappedProxy]: it starts a
// tapped proxy for a test and registers a cleanup that closes it. Call it
// from the test's goroutine.
func StartTappedProxy(tb testing.TB, tap func(Request), targets ...string) *Proxy {
	tb.Helper()
	p, err := NewTappedProxy(tap, targets...)
	return closeAtCleanup(tb, p, err)
}

// tapWriter hands what it forwards to the connection's requestReader,
// then writes it to the server: a request is seen before its reply can
// come back.
type tapWriter struct {
	server   io.Writer
	requests *requestReader
}

func (w tapWriter) Write(b []byte) (int, error) {
	_, _ = w.requests.Write(b) // the reader only observes; it never fails the stream
	return w.server.Write(b)
}

// maxFrame bounds a frame the tap reads: a client's request is at most
// jute.maxbuffer (1 MB by default) and some headers. A longer length
// means the stream is not ZooKeeper's; the tap then stops reading it.
const maxFrame = 16 << 20

// requestReader reads the requests of one client connection from the
// bytes forwarded to the server: length-prefixed frames, the first the
// session handshake (ConnectRequest), every other one a request that
// starts with its xid and op code. It is an io.Writer that never fails,
// so that it cannot break the connection it reads.
type requestReader struct {
	tap       func(Request)
	buf       []byte // the start of a frame not yet complete
	handshake bool   // the handshake has passed
	broken    bool   // a frame too long: not ZooKeeper's protocol
}

func (r *requestReader) Write(b []byte) (int, error) {
	if r.broken {
		return len(b), nil
	}
	r.buf = append(r.buf, b...)
	rest := r.buf
	for len(rest) >= 4 {
		n := binary.BigEndian.Uint32(rest)
		if n > maxFrame {
			r.broken, r.buf = true, nil
			return len(b), nil
		}
		if len(rest) < 4+int(n) {
			break
		}
		frame := rest[4 : 4+n]
		rest = rest[4+n:]
		if !r.handshake {
			r.handshake = true
			continue
		}
		if req, ok := parseRequest(frame); ok {
			r.tap(req)
		}
	}
	r.buf = append(r.buf[:0], rest...)
	return len(b), nil
}

// parseRequest reads a request's op code and path from its frame.
func parseRequest(frame []byte) (Request, bool) {
	if len(frame) < 8 {
		return Request{}, false
	}
	code := int32(binary.BigEndian.Uint32(frame[4:8]))
	op, ok := opNames[code]
	if !ok {
		op = "op" + strconv.Itoa(int(code))
	}
	req := Request{Op: op}
	body := frame[8:]
	switch {
	case op == "multi" || op == "multiRead":
		// Each operation comes after a MultiHeader: its op code, done
		// (a byte) and err.
		if len(body) >= 9 && body[4] == 0 {
			req.Path = readString(body[9:])
		}
	case !pathless[op]:
		req.Path = readString(body)
	}
	return req, true
}

// readString reads a jute string (a length, then that many bytes) from
// the start of b, or returns "" if b does not hold one.
func readString(b []byte) string {
	if len(b) < 4 {
		return ""
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < 0 || int(n) > len(b)-4 {
		return ""
	}
	return string(b[4 : 4+n])
}
