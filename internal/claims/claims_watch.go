package claims

import (
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zkwatch"
	"github.com/zkalloc/zkalloc/rebalance"
)

// The actor waits for claims held by others on watches, never by polling:
// on the claim node of a holder that writes no hold records, or on the
// hold record and the holder's member node (see holds.go). A watch that
// fires has the next attempt try again what it names, and the claims
// grouped behind it (see claims_group.go).

// fired notes that the claim a watch waited on changed: the next attempt
// tries it again.
func (c *Actor) fired(f zkwatch.Fired) {
	if sid, ok := parseSessionKey(f.Key); ok {
		// The member node of a holder whose hold records are waited on.
		delete(c.sessionWatched, sid)
		if f.Event.Type == zk.EventNodeDataChanged {
			// Its data changed, not its session: watched again by the
			// next attempt, the claims left waiting.
			c.rewatching[sid] = c.sessionMember[sid]
			c.dirty = true
			return
		}
		// Deleted, most likely: its session may have ended.
		for _, p := range c.sessionWaiters[sid] {
			c.wake(p)
		}
		delete(c.sessionWaiters, sid)
		delete(c.sessionMember, sid)
		return
	}
	if p, err := rebalance.Parse(f.Key); err == nil {
		c.wake(p)
	}
}

// wake makes the next attempt try p again, and the claims that waited
// with it.
func (c *Actor) wake(p rebalance.Partition) {
	delete(c.waiting, p)
	c.endGroup(p)
	c.dirty = true
}

// sessionKey is the key, among the watches, of the watch on the member
// node of the holder in session sid. A partition's key always holds a
// ':', this one never.
func sessionKey(sid int64) string { return "@" + strconv.FormatInt(sid, 16) }

func parseSessionKey(key string) (int64, bool) {
	hex, ok := strings.CutPrefix(key, "@")
	if !ok {
		return 0, false
	}
	sid, err := strconv.ParseInt(hex, 16, 64)
	return sid, err == nil
}

// drainFired takes every other watch that has fired by now, so that one
// attempt claims them all: a member handing off thousands of partitions
// releases them a batch at a time, and an attempt per claim, each going
// over every wanted and held claim, would take minutes.
func (c *Actor) drainFired() {
	for {
		select {
		case f := <-c.watches.C():
			c.fired(f)
		default:
			return
		}
	}
}

// forgetWatches forgets every watch: they may not have survived.
func (c *Actor) forgetWatches() {
	c.watches.Reset()
	clear(c.waiting)
	c.groups.clear()
	clear(c.sessionWatched)
	clear(c.sessionWaiters)
	clear(c.sessionMember)
	clear(c.rewatching)
}

// waitSession has p wait for the end of session sid too, which holds its
// hold record: the watch on sid's member node, armed once for all the
// claims that wait on sid.
func (c *Actor) waitSession(p rebalance.Partition, sid int64, l *life) {
	if !c.sessionWatched[sid] && l.watch != nil {
		c.watches.Add(sessionKey(sid), l.watch)
		c.sessionWatched[sid] = true
		c.sessionMember[sid] = l.member
	}
	c.sessionWaiters[sid] = append(c.sessionWaiters[sid], p)
}

// rewatch arms again the watches on the member nodes of the holders
// whose node changed but may still live (see fired), and wakes the claims
// that wait on those that have ended.
func (c *Actor) rewatch(conn zksession.Conn, ls *lives) error {
	for sid, member := range c.rewatching {
		if c.sessionWatched[sid] {
			delete(c.rewatching, sid) // watched again meanwhile
			continue
		}
		l := ls.of(conn, c.cfg.Paths, sid, member)
		switch {
		case l.err != nil:
			return l.err
		case l.alive:
			c.watches.Add(sessionKey(sid), l.watch)
			c.sessionWatched[sid] = true
		default:
			for _, p := range c.sessionWaiters[sid] {
				c.wake(p)
			}
			delete(c.sessionWaiters, sid)
		}
		delete(c.rewatching, sid)
	}
	return nil
}
