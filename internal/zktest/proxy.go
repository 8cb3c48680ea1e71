package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// proxyDialTimeout bounds the proxy's connection to a target.
const proxyDialTimeout = 5 * time.Second

// Proxy is a fault-injecting TCP proxy on 127.0.0.1: one listening port per
// target, each forwarding to its target. Give a client [Proxy.Addrs]
// instead of the servers' addresses, then cut its connections with
// [Proxy.Reset] or silence them with [Proxy.Blackhole].
//
// The proxy starts, per listening port, a goroutine that accepts, and per
// connection two that copy; [Proxy.Close] stops and waits for them all.
// A Proxy is safe for concurrent use.
type Proxy struct {
	targets []string
	lns     []net.Listener
	addrs   []string
	// ctx is cancelled by Close to abort dials in flight. It is a field, not
	// an argument, because the goroutines that dial live as long as the
	// Proxy, not as long as any call.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started
	opts   proxyOptions   // fixed
	// sent is when bytes from a client were last forwarded to a target,
	// in Unix nanoseconds; 0 if never.
	sent atomic.Int64

	mu        sync.Mutex
	links     map[*link]struct{}
	blackhole bool
	dark      []bool // by target: black-holed by BlackholeTarget
	rejected  []bool // by target: rejected by Reject or RejectTarget
	closed    bool
}

// link is one proxied connection.
type link struct {
	target int // index in Proxy.targets
	client net.Conn
	server net.Conn // guarded by Proxy.mu; nil until dialled, and for a link accepted while black-holed
	ended  bool     // guarded by Proxy.mu; both connections are closed
	// rejected: guarded by Proxy.mu; Reject reset the client's end (the
	// target's stays open until the rejection is lifted).
	rejected bool
	// blackholed makes the copy loops drop what they read. It is atomic
	// because the loops check it for every read.
	blackholed atomic.Bool
}

// NewProxy listens on a new 127.0.0.1 port for each target address and
// forwards every connection accepted there to that target. The target is
// dialled when a client connects; if that fails, the client's connection
// is reset. NewProxy starts the accepting goroutines at once; the caller
// must Close the Proxy.
func NewProxy(targets ...string) (*Proxy, error) {
	return newProxy(proxyOptions{}, targets...)
}

// proxyOptions are what the ensemble's own proxies do beyond forwarding.
type proxyOptions struct {
	// greet, if not nil, reads the first message a client sends on a new
	// connection and returns what to forward in its place (see
	// electionGreeting).
	greet func(r io.Reader) ([]byte, error)
	// redial is how long to keep dialing a target that refuses the
	// connection (every redialPause) before resetting the client's. A
	// client that dials the target itself is refused at once and
	// retries at its own pace; one that dials the proxy is accepted, and
	// takes the reset that follows for a broken connection. A new leader
	// opens its peer port a moment after its followers learn that it
	// leads: refused by a proxy then, a follower gives up on the leader
	// (ZooKeeper 3.8 does not retry a connection that broke), and the
	// leader waits initLimit ticks for followers that do not come.
	redial time.Duration
	// tap, if not nil, is called with every request a ZooKeeper client
	// sends (see NewTappedProxy).
	tap func(Request)
}

// redialPause is the pause between two dials of a target that refused.
const redialPause = 20 * time.Millisecond

// newProxy is NewProxy with options.
func newProxy(opts proxyOptions, targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("zktest: NewProxy: no targets")
	}
	p := &Proxy{targets: append([]string(nil), targets...), links: make(map[*link]struct{}), dark: make([]bool, len(targets)), rejected: make([]bool, len(targets)), opts: opts}
	for _, t := range targets {
		ln, err := net.Listen("tcp", zklaunch.Loopback+":0")
		if err != nil {
			for _, l := range p.lns {
				l.Close()
			}
			return nil, fmt.Errorf("zktest: proxy for %s: %w", t, err)
		}
		p.lns = append(p.lns, ln)
		p.addrs = append(p.addrs, ln.Addr().String())
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i, ln := range p.lns {
		p.wg.Add(1)
		go p.accept(ln, i)
	}
	return p, nil
}

// Addrs returns the proxy's listening addresses ("127.0.0.1:port"), one per
// target in the order given to [NewProxy]. The slice is a copy. Addrs is
// safe for concurrent use.
func (p *Proxy) Addrs() []string {
	return append([]string(nil), p.addrs...)
}

// Conns returns how many connections are open to each target, in the
// order given to [NewProxy]: the server a client is talking to, when the
// targets are an ensemble's members. A black-holed connection counts until
// the black hole is lifted; a rejected one does not (its client's end is
// gone). Conns is safe for concurrent use.
func (p *Proxy) Conns() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := make([]int, len(p.targets))
	for l := range p.links {
		if !l.ended && !l.rejected {
			n[l.target]++
		}
	}
	return n
}

// LastSent returns when the proxy last forwarded bytes from a client to a
// target, or the zero time if it never has. A ZooKeeper server touches a
// session whenever it receives from the session's client, so the
// session cannot expire before LastSent plus its timeout (with a client
// that has only this proxy). LastSent is safe for concurrent use.
func (p *Proxy) LastSent() time.Time {
	if n := p.sent.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Reset aborts every open connection at once, in both directions, with a
// TCP reset (RST): the client and the server both see the connection fail,
// as when a network path breaks. Connections made afterwards work (or are
// black-holed, see [Proxy.Blackhole]). Reset is safe for concurrent use.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		p.endLocked(l, true)
	}
}

// Blackhole turns the black hole on or off.
//
// While it is on, open connections stay open but nothing is forwarded in
// either direction: what either side sends is read and dropped. New
// connections are accepted, but the proxy does not connect them to the
// target, and what the client sends is dropped. So both sides see silence,
// as when a network path loses every packet, and each notices only
// through its own timeouts. Bytes already read when Blackhole(true) is
// called may still be delivered.
//
// Turning it off resets (RST) every connection that was black-holed, since
// its byte stream has lost data, unless [Proxy.BlackholeTarget] still
// covers it; connections made afterwards forward normally. Turning it on
// or off twice does nothing. Blackhole is safe for
// concurrent use.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.blackhole = on
	p.applyLocked()
}

// BlackholeTarget turns the black hole on or off for the connections to
// target i alone (in the order given to [NewProxy]), as [Proxy.Blackhole]
// does for all: a client then still reaches the other targets, as when a
// network partition separates it from some servers only. A connection is
// black-holed while either black hole covers it.
func (p *Proxy) BlackholeTarget(i int, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.dark[i] = on
	p.applyLocked()
}

// Reject turns a one-sided cut on or off: a firewall in front of the
// targets that rejects what clients send and drops what the targets send.
//
// While it is on, the client's end of every open connection is reset
// (RST) at once, and so is every new connection as soon as it is
// accepted: clients learn of the cut at once. The target's end of an
// open connection stays open and hears nothing more, as with
// [Proxy.Blackhole]: the target notices only through its own timeouts.
// Turning it off resets the targets' ends it kept open, unless a black
// hole still covers them. Reject is safe for concurrent use.
func (p *Proxy) Reject(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	for i := range p.rejected {
		p.rejected[i] = on
	}
	p.applyLocked()
}

// RejectTarget turns the one-sided cut of [Proxy.Reject] on or off for
// the connections to target i alone (in the order given to [NewProxy]):
// a client is then refused that target at once, and moves on to the
// others.
func (p *Proxy) RejectTarget(i int, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.rejected[i] = on
	p.applyLocked()
}

// applyLocked black-holes the links the black holes now cover, resets the
// clients' ends of those Reject covers, and resets the links none covers
// any longer.
func (p *Proxy) applyLocked() {
	for l := range p.links {
		switch on := p.darkLocked(l.target); {
		case on:
			l.blackholed.Store(true)
			if p.rejected[l.target] && !l.rejected {
				l.rejected = true
				abort(l.client) // the pumps see it fail, and leave the server's end alone
			}
		case l.blackholed.Load():
			p.endLocked(l, true)
		}
	}
}

func (p *Proxy) darkLocked(target int) bool {
	return p.blackhole || p.dark[target] || p.rejected[target]
}

// Close stops listening, resets every connection and waits for every
// goroutine the proxy started to return. Later calls do nothing and
// return nil. Close is safe for concurrent use.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	var errs []error
	for _, ln := range p.lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for l := range p.links {
		p.endLocked(l, true)
	}
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
	return errors.Join(errs...)
}

// accept accepts connections on ln until it is closed and starts a
// handler for each.
func (p *Proxy) accept(ln net.Listener, target int) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of file descriptors, say): pause
			// rather than spin.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			abort(c)
			continue // the listener is closed: Accept fails next
		}
		if p.rejected[target] {
			p.mu.Unlock()
			abort(c)
			continue
		}
		l := &link{client: c, target: target}
		l.blackholed.Store(p.darkLocked(target))
		p.links[l] = struct{}{}
		p.wg.Add(1) // this goroutine is counted in wg, so wg is not zero here
		p.mu.Unlock()
		go p.handle(l, p.targets[target])
	}
}

// handle connects l to target and copies in both directions until either
// side ends or the link is aborted.
func (p *Proxy) handle(l *link, target string) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.endLocked(l, true)
		delete(p.links, l)
	}()

	if l.blackholed.Load() {
		// Accepted while black-holed: never connected; drop what comes.
		_ = pump(l, l.client, io.Discard, nil)
		return
	}
	server, err := p.dial(target)
	if err != nil {
		return // the deferred end resets the client
	}
	p.mu.Lock()
	if l.ended {
		p.mu.Unlock()
		abort(server)
		return
	}
	l.server = server
	p.mu.Unlock()

	if p.opts.greet != nil {
		first, err := p.opts.greet(l.client)
		if err != nil {
			return // the deferred end resets both
		}
		if !l.blackholed.Load() {
			p.sent.Store(time.Now().UnixNano())
			if _, err := server.Write(first); err != nil {
				return
			}
		}
	}
	done := make(chan struct{}) // closed when the server-to-client copier returns
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		p.finish(l, server, pump(l, server, l.client, nil))
	}()
	var toServer io.Writer = server
	if p.opts.tap != nil {
		toServer = tapWriter{server: server, requests: &requestReader{tap: p.opts.tap}}
	}
	p.finish(l, l.client, pump(l, l.client, toServer, &p.sent))
	<-done
}

// dial connects to target, dialing again for up to opts.redial while it
// refuses.
func (p *Proxy) dial(target string) (net.Conn, error) {
	d := net.Dialer{Timeout: proxyDialTimeout}
	giveUp := time.Now().Add(p.opts.redial)
	for {
		c, err := d.DialContext(p.ctx, "tcp", target)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(giveUp) {
			return c, err
		}
		select {
		case <-p.ctx.Done():
			return nil, err
		case <-time.After(redialPause):
		}
	}
}

// finish is called when reading from src ended with err. Normally it ends
// l, which ends the other direction too: a clean close (EOF) is passed on
// as a clean close, anything else as a reset. While l is black-holed the
// other side must not learn of it: only src is closed, and the rest of l
// ends when the black hole is lifted.
func (p *Proxy) finish(l *link, src net.Conn, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.blackholed.Load() {
		abort(src)
		return
	}
	p.endLocked(l, !errors.Is(err, io.EOF))
}

// pump copies from src to dst until reading fails, dropping what it reads
// while l is black-holed, and stamps sent (if not nil) as it hands bytes
// to dst: before the write, so that an answer to them can never arrive
// before the stamp. It returns the error that ended it (io.EOF for a clean
// close by src).
func pump(l *link, src net.Conn, dst io.Writer, sent *atomic.Int64) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !l.blackholed.Load() {
			if sent != nil {
				sent.Store(time.Now().UnixNano())
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

// endLocked closes both of l's connections, with a reset if rst; once.
func (p *Proxy) endLocked(l *link, rst bool) {
	if l.ended {
		return
	}
	l.ended = true
	for _, c := range []net.Conn{l.client, l.server} {
		if c == nil {
			continue
		}
		if rst {
			abort(c)
		} else {
			c.Close()
		}
	}
}

// abort closes c with a TCP reset rather than a FIN.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
