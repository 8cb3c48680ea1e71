package zksession

import (
	"bufio"
	"encoding/binary"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The client library does not say when it last heard from the server, nor
// which session timeout the server granted. Both decide how long this
// member may keep working while cut off, so the session reads them off
// the wire: every connection the client dials is wrapped in a
// contactConn, which follows the server's length-prefixed frames as they
// are read. The first frame of a connection is the connect response
// (protocol version, granted timeout, session ID, password); every later
// frame starts with a reply header whose xid tells a reply to one of our
// requests (xid >= 0, or -2 for a ping) from a watch notification (-1),
// which the server sends on its own and which therefore proves nothing
// about the server hearing from us.

// Contact is what the session knows about its last exchange with a server.
type contact struct {
	mu        sync.Mutex
	lastReply time.Time     // when the last reply to one of our requests arrived
	granted   time.Duration // the session timeout in the last connect response that granted one
	sessionID int64         // the session ID in the last connect response
	passwd    []byte        // the session password in the last connect response
	dialed    time.Time     // when the connection of the last connect response was dialed
}

func (c *contact) replied(at time.Time) {
	c.mu.Lock()
	c.lastReply = at
	c.mu.Unlock()
}

func (c *contact) connected(at, dialed time.Time, r connectResponse) {
	c.mu.Lock()
	c.lastReply = at
	c.dialed = dialed
	if r.timeoutMs > 0 {
		// The answer to a resume of an expired session grants none (0),
		// and the client asks for the last granted one again.
		c.granted = time.Duration(r.timeoutMs) * time.Millisecond
	}
	c.sessionID = r.sessionID
	c.passwd = r.passwd
	c.mu.Unlock()
}

func (c *contact) snapshot() (lastReply time.Time, granted time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastReply, c.granted
}

// dialedAt returns when the connection of the last connect response was
// dialed: the server created or revalidated the session after that.
func (c *contact) dialedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialed
}

// credentials returns the session ID and password of the last connect
// response, for tests that expire a session on purpose.
func (c *contact) credentials() (int64, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID, append([]byte(nil), c.passwd...)
}

type connectResponse struct {
	timeoutMs int32
	sessionID int64
	passwd    []byte
}

// frameReader follows the frames of one connection as bytes arrive in
// arbitrary pieces. It is pure: feed returns what the bytes completed.
type frameReader struct {
	sawConnect bool
	lenBuf     [4]byte
	lenHave    int
	remaining  int    // bytes of the current frame body still to come
	head       []byte // the first bytes of the current body, up to what we decode
	want       int    // how many body bytes we decode: all of a connect response, 4 (the xid) of a reply
}

// frameEvent is what a completed piece of a frame tells.
type frameEvent struct {
	connect *connectResponse // a connect response was completed
	reply   bool             // a reply to one of our requests started (xid >= 0 or ping)
	tooBig  int              // the length of a frame past maxPacket, which the client refuses
}

// maxConnectFrame bounds the connect response we buffer: 20 bytes of
// fields and a 16-byte password, with room to spare.
const maxConnectFrame = 256

func (f *frameReader) feed(p []byte, emit func(frameEvent)) {
	for len(p) > 0 {
		if f.remaining == 0 {
			n := copy(f.lenBuf[f.lenHave:], p)
			f.lenHave += n
			p = p[n:]
			if f.lenHave < 4 {
				return
			}
			f.lenHave = 0
			f.remaining = int(binary.BigEndian.Uint32(f.lenBuf[:]))
			f.head = f.head[:0]
			f.want = 4
			if !f.sawConnect {
				f.want = min(f.remaining, maxConnectFrame)
			} else if f.remaining > maxPacket {
				emit(frameEvent{tooBig: f.remaining})
			}
			if f.remaining == 0 {
				continue
			}
		}
		n := min(len(p), f.remaining)
		if need := f.want - len(f.head); need > 0 {
			f.head = append(f.head, p[:min(n, need)]...)
			if len(f.head) == f.want {
				f.decodeHead(emit)
			}
		}
		f.remaining -= n
		p = p[n:]
	}
}

func (f *frameReader) decodeHead(emit func(frameEvent)) {
	if !f.sawConnect {
		f.sawConnect = true
		if r, ok := decodeConnect(f.head); ok {
			emit(frameEvent{connect: &r})
		}
		return
	}
	if xid := int32(binary.BigEndian.Uint32(f.head)); xid >= 0 || xid == -2 {
		emit(frameEvent{reply: true})
	}
}

// decodeConnect reads protocolVersion int32, timeOut int32, sessionID
// int64 and a length-prefixed password.
func decodeConnect(b []byte) (connectResponse, bool) {
	if len(b) < 20 {
		return connectResponse{}, false
	}
	r := connectResponse{
		timeoutMs: int32(binary.BigEndian.Uint32(b[4:8])),
		sessionID: int64(binary.BigEndian.Uint64(b[8:16])),
	}
	n := int(int32(binary.BigEndian.Uint32(b[16:20])))
	if n > 0 && 20+n <= len(b) {
		r.passwd = append([]byte(nil), b[20:20+n]...)
	}
	return r, true
}

// contactConn records, on c, every reply read through it, and bounds the
// handshake.
//
// The client (v1.0.4) waits for the answer to its connect request for ten
// times its receive timeout, 6.7 session timeouts, and nothing, not even
// Close, interrupts that wait. A server that accepts a connection and never
// answers it (as one did in CI for a connection that arrived while it
// started) would hold the client that long, far past the session's
// expiry. Until the connect response has been read, every deadline the
// client sets is brought forward to handshake from now, so that it gives
// up on such a connection and dials again in time to resume the session.
//
// It also tells link when the connection is answered, which requests go
// out on it and when it ends.
type contactConn struct {
	net.Conn
	contact   *contact
	link      *link
	gen       uint64 // this connection's number on link
	now       func() time.Time
	dialed    time.Time   // when the connection was dialed
	frames    frameReader // used only by the client's single reading goroutine
	handshake time.Duration
	answered  atomic.Bool // the connect response has been read
	logger    *slog.Logger
	server    string        // the address dialed
	failures  *failures     // told of a connection that ends before it is answered
	bigLogged *atomic.Int64 // when a reply too big was last logged, in Unix nanoseconds; shared by the session's connections
	ahead     *bufio.Reader // over readConn, made on the first Read; used only by the client's single reading goroutine
}

// readAheadSize is how many bytes a read of the connection asks for when
// the client asks for fewer. The client reads each reply in two reads, its
// 4-byte length and then its body, each a system call; reading ahead, one
// system call usually brings a whole reply (a watch event and the reply
// after it, often), and the client's reads are then served from memory.
// Larger reads (a body of at least this size) go straight to the
// connection.
const readAheadSize = 16 << 10

// readerFunc is a function as an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// tooBigEvery bounds how often a reply too big for the client is logged:
// the request that asked for it is retried on every new connection.
const tooBigEvery = 10 * time.Second

// tooBig logs a reply of n bytes, more than the client accepts: it drops
// the connection, and will again on every retry of the request until what
// it reads shrinks (a list of children, a node's data, written by
// something else than this library).
func (c *contactConn) tooBig(n int) {
	now := time.Now().UnixNano()
	last := c.bigLogged.Load()
	if last != 0 && time.Duration(now-last) < tooBigEvery || !c.bigLogged.CompareAndSwap(last, now) {
		return
	}
	c.logger.Error("zkalloc: ZooKeeper sent a reply bigger than the client's limit; the connection drops, and will again until the nodes read shrink (a list of children or a node's data written by another program?)",
		"server", c.server, "bytes", n, "limit", maxPacket)
}

func (c *contactConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.bound(t)) }

func (c *contactConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.bound(t))
}

func (c *contactConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.bound(t))
}

// bound returns t, or during the handshake the earlier of t and handshake
// from now; the zero time (no deadline) counts as later than any. It uses
// the real clock, as the connection's deadlines do.
func (c *contactConn) bound(t time.Time) time.Time {
	if c.answered.Load() {
		return t
	}
	limit := time.Now().Add(c.handshake)
	if t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

// Read serves the client's reads from the bytes read ahead, or reads the
// connection: into p if p is large, else ahead into a buffer of
// readAheadSize (bufio.Reader does both, at most one read of the
// connection per call). The bytes are followed (readConn) when they
// arrive, not when the client takes them: a reply's time of contact is
// when it came.
func (c *contactConn) Read(p []byte) (int, error) {
	if c.ahead == nil {
		c.ahead = bufio.NewReaderSize(readerFunc(c.readConn), readAheadSize)
	}
	return c.ahead.Read(p)
}

// readConn reads the connection into p and follows the frames it brings.
func (c *contactConn) readConn(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.link.synced() // after the bytes arrived: see link.synced
	if n > 0 {
		c.frames.feed(p[:n], func(e frameEvent) {
			switch {
			case e.connect != nil:
				c.answered.Store(true)
				c.contact.connected(c.now(), c.dialed, *e.connect)
				c.link.connected(c.gen, e.connect.sessionID)
			case e.reply:
				c.contact.replied(c.now())
			case e.tooBig > 0:
				c.tooBig(e.tooBig)
			}
		})
	}
	if err != nil {
		c.handshakeFailed(err)
		c.link.ended(c.gen)
	}
	return n, err
}

// Write passes on what the client writes, one whole request per call
// after the handshake: length, xid, opcode, body. It refuses a request
// that link fences off, which fails the connection: the client answers
// the request with zk.ErrConnectionClosed and dials again.
func (c *contactConn) Write(p []byte) (int, error) {
	if c.answered.Load() && len(p) >= 12 {
		xid, op := int32(binary.BigEndian.Uint32(p[4:8])), int32(binary.BigEndian.Uint32(p[8:12]))
		if !c.link.wrote(c.gen, xid, op) {
			c.logger.Info("zkalloc: not sending a request made in an earlier session; reconnecting", "opcode", op)
			c.link.ended(c.gen)
			return 0, errFenced
		}
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		c.handshakeFailed(err)
		c.link.ended(c.gen)
	}
	return n, err
}

// handshakeFailed tells failures of a connection that fails before the
// server has answered its connect request.
func (c *contactConn) handshakeFailed(err error) {
	if !c.answered.Load() {
		c.failures.failed(c.server, &handshakeError{server: c.server, err: err})
	}
}

func (c *contactConn) Close() error {
	c.link.ended(c.gen)
	return c.Conn.Close()
}
