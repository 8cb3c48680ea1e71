package zktest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// greeting builds the opening of an election connection: version, id and
// the advertised addresses.
func greeting(version, id int64, addr string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	if version < 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
		b = append(b, addr...)
	}
	return b
}

func TestElectionGreeting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"one address", greeting(-65536, 3, "127.0.0.1:28567"), greeting(-65536, 3, "0.0.0.0:28567")},
		{"several addresses", greeting(-65535, 2, "127.0.0.1:1|[::1]:22"), greeting(-65535, 2, "0.0.0.0:1|0.0.0.0:22")},
		{"older protocol: the id alone", greeting(7, 7, ""), greeting(7, 7, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := []byte("the notifications that follow")
			r := bytes.NewReader(append(tt.in, after...))
			got, err := electionGreeting(r)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("electionGreeting = %q, %v; want %q", got, err, tt.want)
			}
			rest, _ := io.ReadAll(r)
			if !bytes.Equal(rest, after) {
				t.Errorf("left %q unread, want %q", rest, after)
			}
		})
	}
	for _, bad := range [][]byte{
		greeting(-65536, 3, "no port"),
		greeting(-65536, 3, "127.0.0.1:1")[:12],
		binary.BigEndian.AppendUint32(greeting(-65536, 3, "")[:16], maxGreeting+1),
	} {
		if got, err := electionGreeting(bytes.NewReader(bad)); err == nil {
			t.Errorf("electionGreeting(%q) = %q, want an error", bad, got)
		}
	}
}

// A quorum proxy keeps dialing a target that refuses, as a new leader's
// peer port does for a moment, instead of resetting the follower.
func TestProxyRedial(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", zklaunch.Loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // refused until it listens again below
	p, err := newProxy(proxyOptions{redial: 10 * time.Second}, target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.DialTimeout("tcp", p.Addrs()[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "early"); err != nil {
		t.Fatal(err)
	}
	// The target comes up a moment after the client connected (the pause
	// is the fault itself): the proxy is refused a few times meanwhile.
	time.Sleep(5 * redialPause)
	if ln, err = net.Listen("tcp", target); err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	s, err := ln.Accept()
	if err != nil {
		t.Fatalf("the proxy did not dial again: %v", err)
	}
	defer s.Close()
	buf := make([]byte, 5)
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "early" {
		t.Errorf("target read %q, %v; want what the client sent before it listened", buf, err)
	}
}
