package zksession

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/actor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// frame returns a length-prefixed frame.
func frame(body ...[]byte) []byte {
	var b []byte
	for _, part := range body {
		b = append(b, part...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func connectBody(timeoutMs int32, sessionID int64, passwd []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // protocol version
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs))
	b = binary.BigEndian.AppendUint64(b, uint64(sessionID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	return append(b, 0) // read-only flag
}

// replyBody is a reply header with the given xid and some payload.
func replyBody(xid int32, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, 99) // zxid
	b = binary.BigEndian.AppendUint32(b, 0)  // err
	return append(b, make([]byte, payload)...)
}

func TestFrameReader(t *testing.T) {
	t.Parallel()
	passwd := []byte("0123456789abcdef")
	var stream []byte
	stream = append(stream, frame(connectBody(4000, 0x1234, passwd))...)
	stream = append(stream, frame(replyBody(-1, 40))...) // watch event: not a reply
	stream = append(stream, frame(replyBody(-2, 0))...)  // ping reply
	stream = append(stream, frame(replyBody(7, 300))...) // reply to a request
	stream = append(stream, frame()...)                  // empty frame, tolerated

	// Feed the stream in every chunk size, so frame and length boundaries
	// fall everywhere.
	for chunk := 1; chunk <= len(stream); chunk++ {
		var f frameReader
		var connects []connectResponse
		replies := 0
		for at := 0; at < len(stream); at += chunk {
			f.feed(stream[at:min(at+chunk, len(stream))], func(e frameEvent) {
				if e.connect != nil {
					connects = append(connects, *e.connect)
				}
				if e.reply {
					replies++
				}
			})
		}
		if len(connects) != 1 || connects[0].timeoutMs != 4000 || connects[0].sessionID != 0x1234 || string(connects[0].passwd) != string(passwd) {
			t.Fatalf("chunk %d: connect responses %+v", chunk, connects)
		}
		if replies != 2 {
			t.Fatalf("chunk %d: %d replies, want 2 (ping and xid 7, not the watch event)", chunk, replies)
		}
	}
}

// TestFrameReaderTooBig: a frame longer than the client accepts is told,
// with its length, after the connect response only.
func TestFrameReaderTooBig(t *testing.T) {
	t.Parallel()
	big := binary.BigEndian.AppendUint32(nil, maxPacket+1)
	stream := append(frame(connectBody(4000, 1, nil)), frame(replyBody(3, 10))...)
	stream = append(stream, big...)
	var f frameReader
	var got []int
	f.feed(stream, func(e frameEvent) {
		if e.tooBig > 0 {
			got = append(got, e.tooBig)
		}
	})
	if len(got) != 1 || got[0] != maxPacket+1 {
		t.Errorf("too big frames %v; want one of %d", got, maxPacket+1)
	}
	var first frameReader // a connect response is never too big
	first.feed(big, func(e frameEvent) {
		if e.tooBig > 0 {
			t.Errorf("a connect response reported too big")
		}
	})
}

// The handshake bound is a part of the session timeout the server last
// granted, whichever way it clamped the one asked for; an answer that
// grants none (the session expired) leaves it as it was.
func TestHandshakeBoundFollowsGrantedTimeout(t *testing.T) {
	t.Parallel()
	dialer := func(string, string, time.Duration) (net.Conn, error) {
		a, b := net.Pipe()
		b.Close()
		return a, nil
	}
	s := New(Config{Servers: []string{"127.0.0.1:1"}, Timeout: 30 * time.Second, Dialer: dialer, Logger: slog.New(slog.DiscardHandler), Clock: actor.RealClock()})
	bound := func() time.Duration {
		t.Helper()
		c, err := s.dial("tcp", "127.0.0.1:1", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.(*contactConn).handshake
	}
	tests := []struct {
		name      string
		answer    bool  // a connect response comes first
		timeoutMs int32 // the timeout it grants; 0: none, the session expired
		want      time.Duration
	}{
		{name: "before any answer: a third of the one asked for", want: 10 * time.Second},
		{name: "clamped down", answer: true, timeoutMs: 9000, want: 3 * time.Second},
		{name: "expired: the last granted", answer: true, want: 3 * time.Second},
		{name: "clamped up", answer: true, timeoutMs: 60_000, want: 20 * time.Second},
	}
	for _, tt := range tests {
		if tt.answer {
			s.contact.connected(time.Now(), time.Now(), connectResponse{timeoutMs: tt.timeoutMs})
		}
		if got := bound(); got != tt.want {
			t.Errorf("%s: handshake bound %v, want %v", tt.name, got, tt.want)
		}
	}
}

// chunkConn is a net.Conn whose reads hand out a stream in the pieces
// given, one piece (or what fits of it) per read, and then an error with
// the last bytes; it counts the reads.
type chunkConn struct {
	net.Conn // nil: only Read, Close and the deadlines are used
	pieces   [][]byte
	end      error
	reads    int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	c.reads++
	if len(c.pieces) == 0 {
		return 0, c.end
	}
	n := copy(p, c.pieces[0])
	if n < len(c.pieces[0]) {
		c.pieces[0] = c.pieces[0][n:]
		return n, nil
	}
	c.pieces = c.pieces[1:]
	if len(c.pieces) == 0 {
		return n, c.end
	}
	return n, nil
}

func (c *chunkConn) Close() error                     { return nil }
func (c *chunkConn) SetReadDeadline(time.Time) error  { return nil }
func (c *chunkConn) SetWriteDeadline(time.Time) error { return nil }
func (c *chunkConn) SetDeadline(time.Time) error      { return nil }

// TestContactConnReadsAhead: the client reads each reply as its length
// and then its body; the connection reads ahead, so that small replies
// arriving together take one read of the connection, a large body goes
// straight into the client's buffer, every reply is still followed (the
// connect response, the time of the last reply), and an error that came
// with the last bytes is returned after them.
func TestContactConnReadsAhead(t *testing.T) {
	t.Parallel()
	frames := [][]byte{
		frame(connectBody(4000, 0x42, []byte("0123456789abcdef"))),
		frame(replyBody(-1, 40)), // a watch event
		frame(replyBody(5, 100)),
		frame(replyBody(6, 2*readAheadSize)), // read straight into the client's buffer
		frame(replyBody(7, 10)),
	}
	small := append(append(append([]byte(nil), frames[0]...), frames[1]...), frames[2]...)
	fake := &chunkConn{pieces: [][]byte{small, frames[3], frames[4]}, end: io.EOF}
	s := New(Config{Servers: []string{"127.0.0.1:1"}, Timeout: 30 * time.Second, Logger: slog.New(slog.DiscardHandler), Clock: actor.RealClock(),
		Dialer: func(string, string, time.Duration) (net.Conn, error) { return fake, nil }})
	c, err := s.dial("tcp", "127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// As the client reads: a length, then the body.
	var got [][]byte
	var length [4]byte
	for {
		if _, err := io.ReadFull(c, length[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("after %d frames: %v, want EOF", len(got), err)
			}
			break
		}
		body := make([]byte, binary.BigEndian.Uint32(length[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			t.Fatalf("body of frame %d: %v", len(got), err)
		}
		got = append(got, append(length[:], body...))
	}
	if len(got) != len(frames) {
		t.Fatalf("read %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Errorf("frame %d differs", i)
		}
	}
	// The three small frames in one read; the large one's length and
	// first bytes ahead, the rest of its body straight in; the last frame
	// in one read with the EOF, which is kept and returned on the next
	// read, without reading the connection again. Without reading ahead,
	// every frame would take two reads or more (11 here).
	if fake.reads != 4 {
		t.Errorf("%d reads of the connection, want 4", fake.reads)
	}
	if id, _ := s.contact.credentials(); id != 0x42 {
		t.Errorf("session %#x, want the connect response's 0x42", id)
	}
	if last, _ := s.contact.snapshot(); last.IsZero() {
		t.Error("no reply recorded")
	}
}
