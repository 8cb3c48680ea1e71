package zktest

import (
	"encoding/binary"
	"slices"
	"testing"
)

// frame returns a length-prefixed frame of the given parts.
func frame(parts ...[]byte) []byte {
	body := slices.Concat(parts...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func header(op int32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 7), uint32(op))
}

func jstring(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

// The tap reads frames however the bytes arrive, skips the handshake,
// and finds each request's path.
func TestRequestReader(t *testing.T) {
	multiHeader := []byte{0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff} // create, not done, no error
	stream := slices.Concat(
		frame([]byte("the handshake, not a request")),
		frame(header(4), jstring("/a/b"), []byte{1}), // getData, watch
		frame(header(11)), // ping
		frame(header(14), multiHeader, jstring("/owners/t:1")), // multi
		frame(header(101), []byte{0, 0, 0, 0, 0, 0, 0, 9}),     // setWatches: no path
		frame(header(9), jstring("/")),                         // sync
		frame(header(77), jstring("/x")),                       // an op it does not name
	)
	want := []Request{
		{Op: "getData", Path: "/a/b"},
		{Op: "ping"},
		{Op: "multi", Path: "/owners/t:1"},
		{Op: "setWatches"},
		{Op: "sync", Path: "/"},
		{Op: "op77", Path: "/x"},
	}
	for _, chunk := range []int{1, 3, 7, len(stream)} {
		var got []Request
		r := &requestReader{tap: func(req Request) { got = append(got, req) }}
		for b := stream; len(b) > 0; {
			n := min(chunk, len(b))
			if m, err := r.Write(b[:n]); m != n || err != nil {
				t.Fatalf("Write of %d bytes = %d, %v", n, m, err)
			}
			b = b[n:]
		}
		if !slices.Equal(got, want) {
			t.Errorf("in chunks of %d: got %v, want %v", chunk, got, want)
		}
	}
	// A length no ZooKeeper frame has: the reader stops, and never fails.
	var got []Request
	r := &requestReader{tap: func(req Request) { got = append(got, req) }}
	r.Write([]byte{0xff, 0xff, 0xff, 0xff})
	r.Write(frame(header(4), jstring("/late")))
	if len(got) != 0 {
		t.Errorf("after a garbage length: got %v, want nothing", got)
	}
}
