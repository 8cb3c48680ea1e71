package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// With [Options.QuorumProxies], each member's zoo.cfg lists its own peer
// and election ports, on which it listens, and for every other member a
// proxy to that member's peer port and one to its election port, which it
// dials. So every follower-to-leader connection, and every connection of
// leader election, passes through a proxy of its own, and a test can
// silence one member's links without touching the others' or any
// client's. ZooKeeper keeps each member's static server list as written
// (every one has version 0, so none replaces another's).
//
// Isolating a leader (measured with ZooKeeper 3.8.0, tick 500 ms,
// syncLimit 2, three members, eight rounds each): with its quorum links
// silenced alone ([Ensemble.BlackholeQuorum]), the other two elected a
// new leader 1.1 to 1.3 s after the cut in six rounds, and only after
// 6.2 s in two. The first follower to time out asks the others whom they
// follow; the old leader still answers on the election port that it
// leads, and the other follower (whose own timeout has not fired yet)
// that it follows it, which makes a quorum for the old leader: the
// follower goes back to it, dials its peer port through the silent
// proxy, and waits initLimit ticks (5 s) for an answer. With its election
// links silenced too ([Ensemble.Isolate]), the old leader's vote is in
// nobody's tally: a new leader 1.1 to 1.5 s after the cut, every round
// (TestEnsembleIsolateLeader). Two more things make the election links
// cuttable and the elections prompt: electionGreeting, and the quorum
// proxies' redial (see proxyOptions).
//
// [Ensemble.Reject] is the one-sided variant: the others learn of the cut
// at once, from resets, and elected a new leader 0.27 to 0.5 s after it,
// while the old leader answered its client's syncs until 0.7 to 1.4 s
// (tick 500 ms, syncLimit 2; TestEnsembleRejectLeader).

// proxyLocked replaces the ensemble's quorum and election proxies with
// new ones to the ports in peers, if the ensemble has them.
func (e *Ensemble) proxyLocked(peers []zklaunch.Peer) error {
	if err := e.closeProxiesLocked(); err != nil {
		return err
	}
	if !e.settings.proxies {
		return nil
	}
	n := len(peers)
	e.proxies = make([][]*Proxy, n)
	e.eproxies = make([][]*Proxy, n)
	for i := range n {
		e.proxies[i] = make([]*Proxy, n)
		e.eproxies[i] = make([]*Proxy, n)
		for j := range n {
			if i == j {
				continue
			}
			p, err := newProxy(proxyOptions{redial: peerRedial}, zklaunch.HostPort(peers[j].PeerPort))
			if err != nil {
				return errors.Join(err, e.closeProxiesLocked())
			}
			e.proxies[i][j] = p
			if p, err = newProxy(proxyOptions{greet: electionGreeting}, zklaunch.HostPort(peers[j].ElectionPort)); err != nil {
				return errors.Join(err, e.closeProxiesLocked())
			}
			e.eproxies[i][j] = p
		}
	}
	return nil
}

// peerRedial is how long a quorum proxy dials a member's peer port that
// refuses: about the time a new leader takes to open it. (A follower's
// own dial would be retried for initLimit ticks, a second apart.)
const peerRedial = 2 * time.Second

// electionGreeting reads the message with which a member opens a leader
// election connection and returns it with the address the member
// advertises replaced by a wildcard one.
//
// ZooKeeper 3.8 opens with the protocol version (an int64, -65535 or
// -65536), the member's ID (int64) and the election address of its own
// zoo.cfg line (an int32 length, then "host:port", several joined by
// '|'). A member that receives a connection from a member with a
// smaller ID drops it and connects back itself, to that advertised
// address, which is the other member's real election port: the
// connection back would bypass the proxies, and survive any black hole.
// A wildcard address ("0.0.0.0:port") is one the receiver does not
// record, and it then connects back to the address its own zoo.cfg gives,
// which is its proxy. An opening of an older protocol (a non-negative
// version: the ID alone) carries no address and passes unchanged.
func electionGreeting(r io.Reader) ([]byte, error) {
	var head [16]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if int64(binary.BigEndian.Uint64(head[:8])) >= 0 {
		return head[:], nil
	}
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxGreeting {
		return nil, fmt.Errorf("zktest: election greeting of %d bytes", size)
	}
	addrs := make([]byte, size)
	if _, err := io.ReadFull(r, addrs); err != nil {
		return nil, err
	}
	var wild []string
	for _, a := range strings.Split(string(addrs), "|") {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("zktest: election greeting address %q: %w", a, err)
		}
		wild = append(wild, net.JoinHostPort("0.0.0.0", port))
	}
	addr := strings.Join(wild, "|")
	out := append(head[:], binary.BigEndian.AppendUint32(nil, uint32(len(addr)))...)
	return append(out, addr...), nil
}

// maxGreeting bounds the address list of an election greeting; ZooKeeper's
// own bound is larger, but a few addresses take well under a kilobyte.
const maxGreeting = 64 << 10

// peersOfLocked returns the server list of member i's zoo.cfg: peers,
// with every other member's peer and election ports replaced by i's
// proxies to them.
func (e *Ensemble) peersOfLocked(i int, peers []zklaunch.Peer) []zklaunch.Peer {
	if e.proxies == nil {
		return peers
	}
	own := append([]zklaunch.Peer(nil), peers...)
	for j, p := range e.proxies[i] {
		if p != nil {
			own[j].PeerPort = proxyPort(p)
			own[j].ElectionPort = proxyPort(e.eproxies[i][j])
		}
	}
	return own
}

// proxyPort is the port a one-target proxy listens on.
func proxyPort(p *Proxy) int {
	_, port, _ := net.SplitHostPort(p.Addrs()[0])
	n, _ := strconv.Atoi(port)
	return n
}

func (e *Ensemble) closeProxiesLocked() error {
	var errs []error
	for _, rows := range [][][]*Proxy{e.proxies, e.eproxies} {
		for _, row := range rows {
			for _, p := range row {
				if p != nil {
					errs = append(errs, p.Close())
				}
			}
		}
	}
	e.proxies, e.eproxies = nil, nil
	return errors.Join(errs...)
}

// BlackholeQuorum silences (on) or restores (off) every quorum link of
// member i: its connection to the leader if it follows, its followers'
// connections if it leads. Its client port and leader election are left
// alone. While silenced, nothing passes either way and nobody is told:
// as when packets are lost, each end notices only by its own timeouts.
// A follower goes on answering its clients by itself for up to
// [Options.SyncLimit] ticks, while the leader, hearing nothing of them,
// expires their sessions on time. Restoring resets the silenced
// connections (see [Proxy.Blackhole]); the member then rejoins.
//
// It needs [Options.QuorumProxies]. BlackholeQuorum is safe for
// concurrent use.
func (e *Ensemble) BlackholeQuorum(i int, on bool) error {
	return e.blackholeLinks("BlackholeQuorum", i, on, true, false)
}

// BlackholeElection silences (on) or restores (off) every leader election
// link of member i, both ways, as [Ensemble.BlackholeQuorum] does its
// quorum links: the others no longer hear its votes, nor it theirs. Its
// quorum links and client port are left alone.
//
// It needs [Options.QuorumProxies]. BlackholeElection is safe for
// concurrent use.
func (e *Ensemble) BlackholeElection(i int, on bool) error {
	return e.blackholeLinks("BlackholeElection", i, on, false, true)
}

// Isolate silences (on) or restores (off) member i's quorum and election
// links at once: [Ensemble.BlackholeQuorum] and
// [Ensemble.BlackholeElection] together. Its clients still reach it.
// Isolating the leader this way lets the others elect a new one after
// their syncLimit timeout (see the package's notes on isolating a
// leader), while it goes on answering its own clients by itself until
// its own syncLimit has passed without a quorum of acknowledgements.
//
// It needs [Options.QuorumProxies]. Isolate is safe for concurrent use.
func (e *Ensemble) Isolate(i int, on bool) error {
	return e.blackholeLinks("Isolate", i, on, true, true)
}

// Reject cuts member i off from the others on one side only (on), or
// restores its links (off): as a firewall on member i's host that
// rejects what the other members send it and drops what it sends them.
// The others' ends of their quorum and election connections to member i
// are reset at once, and so is any new one; member i's ends fall silent
// (its own connections to the others' ports are black-holed both ways).
// So the others notice at once and elect a new leader without it within
// a moment, while member i, hearing nothing, notices only by its own
// timeouts: as a leader, it goes on answering its own clients until its
// syncLimit has passed without a quorum of acknowledgements. Its client
// port is left alone. Restoring resets the connections it kept.
//
// It needs [Options.QuorumProxies]. Reject is safe for concurrent use.
func (e *Ensemble) Reject(i int, on bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(i); err != nil {
		return err
	}
	if e.proxies == nil {
		return errors.New("zktest: Reject: the ensemble was started without Options.QuorumProxies")
	}
	for j := range e.proxies {
		if j == i {
			continue
		}
		e.proxies[j][i].Reject(on)
		e.eproxies[j][i].Reject(on)
		e.proxies[i][j].Blackhole(on)
		e.eproxies[i][j].Blackhole(on)
	}
	return nil
}

// blackholeLinks turns the black hole of member i's quorum links (quorum)
// and election links (election) on or off, both ways.
func (e *Ensemble) blackholeLinks(op string, i int, on, quorum, election bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(i); err != nil {
		return err
	}
	if e.proxies == nil {
		return fmt.Errorf("zktest: %s: the ensemble was started without Options.QuorumProxies", op)
	}
	for j := range e.proxies {
		var ps []*Proxy
		if quorum {
			ps = append(ps, e.proxies[i][j], e.proxies[j][i])
		}
		if election {
			ps = append(ps, e.eproxies[i][j], e.eproxies[j][i])
		}
		for _, p := range ps {
			if p != nil {
				p.Blackhole(on)
			}
		}
	}
	return nil
}

// Mode returns what member i reports as its mode in `srvr`: "leader",
// "follower", "standalone", or "" if it is stopped, not serving or not
// answering. ctx and a short probe timeout bound the call. Mode is safe
// for concurrent use.
func (e *Ensemble) Mode(ctx context.Context, i int) (string, error) {
	e.mu.Lock()
	if err := e.checkLocked(i); err != nil {
		e.mu.Unlock()
		return "", err
	}
	m := e.members[i]
	running, addr := m.running(), m.addr()
	e.mu.Unlock()
	if !running {
		return "", nil
	}
	mode, _ := zklaunch.Mode(ctx, addr)
	return mode, nil
}
