package zktest

import (
	"context"
	"errors"
	"net"
	"strconv"
)

// With [Options.QuorumProxies], each member's zoo.cfg lists its own peer
// port, on which it listens when it leads, and for every other member a
// proxy to that member's peer port, which it dials when it follows. So
// every follower-to-leader connection passes through a proxy of its own,
// and a test can silence one member's links without touching the
// others' or any client's. ZooKeeper keeps each member's static server
// list as written (every one has version 0, so none replaces another's).
// Leader election (the election port) is not proxied: a member cut off
// on its peer links still hears who leads, and keeps trying to reach it.

// proxyLocked replaces the ensemble's quorum proxies with new ones to the
// peer ports in peers, if the ensemble has them.
func (e *Ensemble) proxyLocked(peers []peer) error {
	if err := e.closeProxiesLocked(); err != nil {
		return err
	}
	if !e.settings.proxies {
		return nil
	}
	n := len(peers)
	e.proxies = make([][]*Proxy, n)
	for i := range n {
		e.proxies[i] = make([]*Proxy, n)
		for j := range n {
			if i == j {
				continue
			}
			p, err := NewProxy(hostPort(peers[j].peerPort))
			if err != nil {
				return errors.Join(err, e.closeProxiesLocked())
			}
			e.proxies[i][j] = p
		}
	}
	return nil
}

// peersOfLocked returns the server list of member i's zoo.cfg: peers,
// with every other member's peer port replaced by i's proxy to it.
func (e *Ensemble) peersOfLocked(i int, peers []peer) []peer {
	if e.proxies == nil {
		return peers
	}
	own := append([]peer(nil), peers...)
	for j, p := range e.proxies[i] {
		if p != nil {
			own[j].peerPort = proxyPort(p)
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
	for _, row := range e.proxies {
		for _, p := range row {
			if p != nil {
				errs = append(errs, p.Close())
			}
		}
	}
	e.proxies = nil
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(i); err != nil {
		return err
	}
	if e.proxies == nil {
		return errors.New("zktest: BlackholeQuorum: the ensemble was started without Options.QuorumProxies")
	}
	for j := range e.proxies {
		for _, p := range []*Proxy{e.proxies[i][j], e.proxies[j][i]} {
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
	reply, err := probe(ctx, addr, "srvr")
	if err != nil {
		return "", nil
	}
	return parseMode(reply), nil
}
