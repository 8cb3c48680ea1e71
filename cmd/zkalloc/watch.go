package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/zkwatch"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// change is one line of watch's output.
type change struct {
	Time      string `json:"time"`
	Kind      string `json:"kind"` // joined, left, drained, undrained, topic-added, topic-removed, added, removed, corrupt, claimed, released
	Member    string `json:"member,omitempty"`
	Topic     string `json:"topic,omitempty"`
	IDs       string `json:"ids,omitempty"`
	Partition string `json:"partition,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// watcher keeps what watch has seen of the group, and one ZooKeeper
// watch on each node it follows: members/, drained/ (the drain marks),
// partitions/ and each topic, owners/. A watch that fires (a change, a reconnection, a new session)
// re-reads its node and prints what changed.
type watcher struct {
	c       *client
	out     io.Writer
	json    bool
	watches *zkwatch.Set // keyed by path
	armed   map[string]bool

	members map[string]string // name → detail
	drained map[string]bool   // the drain marks
	topics  map[string][]int32
	owners  map[string]string // "topic:id" → member
}

// watch prints one line per change until ctx ends (SIGINT); -timeout
// bounds only connecting.
func watch(ctx context.Context, o options, out io.Writer) error {
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	c, err := connect(cctx, o)
	cancel()
	if err != nil {
		return err
	}
	defer c.conn.Close()
	if err := c.checkGroup(); err != nil {
		return err
	}
	wt := &watcher{
		c: c, out: out, json: o.json,
		watches: zkwatch.New(), armed: map[string]bool{},
		members: map[string]string{}, drained: map[string]bool{}, topics: map[string][]int32{}, owners: map[string]string{},
	}
	defer wt.watches.Close() // before Close: stops and waits for the watch goroutines
	todo := map[string]bool{c.paths.Members(): true, c.paths.Drained(): true, c.paths.Partitions(): true, c.paths.Owners(): true}
	first := true
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		for p := range todo {
			if err := wt.refresh(p, !first); err != nil {
				if errors.Is(err, zk.ErrNoAuth) {
					return err
				}
				continue // connection trouble: retried on the ticker
			}
			delete(todo, p)
		}
		if first && len(todo) == 0 {
			first = false
			topics := 0
			for _, ids := range wt.topics {
				if len(ids) > 0 {
					topics++
				}
			}
			wt.emit(change{Kind: "watching", Detail: fmt.Sprintf("group %s: %d members, %d topics, %d claims",
				c.paths.Group, len(wt.members), topics, len(wt.owners))})
		}
		select {
		case <-ctx.Done():
			return nil
		case f := <-wt.watches.C():
			wt.armed[f.Key] = false
			todo[f.Key] = true
		case <-retry.C:
		}
	}
}

// arm re-reads p once ch fires.
func (wt *watcher) arm(p string, ch <-chan zk.Event) {
	wt.armed[p] = true
	wt.watches.Add(p, ch)
}

// children lists p's children and watches it; a missing node is watched
// for its creation.
func (wt *watcher) children(p string) ([]string, error) {
	wt.armed[p] = false
	names, _, ch, err := wt.c.conn.ChildrenW(p)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, _, ch, err = wt.c.conn.ExistsW(p)
		if err == nil && ok {
			return nil, errors.New("created meanwhile") // retried
		}
	}
	if err != nil {
		return nil, err
	}
	wt.arm(p, ch)
	slices.Sort(names)
	return names, nil
}

// refresh re-reads p and prints what changed, if loud.
func (wt *watcher) refresh(p string, loud bool) error {
	paths := wt.c.paths
	switch {
	case p == paths.Members():
		return wt.refreshMembers(loud)
	case p == paths.Drained():
		return wt.refreshDrained(loud)
	case p == paths.Partitions():
		return wt.refreshTopics(loud)
	case p == paths.Owners():
		return wt.refreshOwners(loud)
	case path.Dir(p) == paths.Partitions():
		return wt.refreshTopic(path.Base(p), loud)
	}
	return nil
}

func (wt *watcher) refreshMembers(loud bool) error {
	names, err := wt.children(wt.c.paths.Members())
	if err != nil {
		return err
	}
	now, newNames := readNew(names, wt.members, func(n string) string {
		data, stat, err := wt.c.conn.Get(wt.c.paths.Member(n))
		if err != nil {
			return ""
		}
		d := fmt.Sprintf("session 0x%x", stat.EphemeralOwner)
		if info, ok := membership.ParseInfo(data); ok {
			d = fmt.Sprintf("host %s, pid %d, %s, strategy %s, %s", info.Host, info.PID, d, info.Strategy, info.Version)
		}
		return d
	})
	for _, n := range newNames {
		if loud {
			wt.emit(change{Kind: "joined", Member: n, Detail: now[n]})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(wt.members)) {
		if _, ok := now[n]; !ok && loud {
			wt.emit(change{Kind: "left", Member: n})
		}
	}
	wt.members = now
	return nil
}

// refreshDrained lists the drain marks (`zkalloc drain`) and prints
// those made and deleted since the last listing.
func (wt *watcher) refreshDrained(loud bool) error {
	names, err := wt.children(wt.c.paths.Drained())
	if err != nil {
		return err
	}
	now := make(map[string]bool, len(names))
	for _, n := range names {
		now[n] = true
		if !wt.drained[n] && loud {
			wt.emit(change{Kind: "drained", Member: n})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(wt.drained)) {
		if !now[n] && loud {
			wt.emit(change{Kind: "undrained", Member: n})
		}
	}
	wt.drained = now
	return nil
}

func (wt *watcher) refreshTopics(loud bool) error {
	names, err := wt.children(wt.c.paths.Partitions())
	if err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(wt.topics)) {
		if !slices.Contains(names, t) {
			if loud && len(wt.topics[t]) > 0 {
				wt.emit(change{Kind: "topic-removed", Topic: t, IDs: string(partitions.EncodeIDs(wt.topics[t]))})
			}
			delete(wt.topics, t)
		}
	}
	for _, t := range names {
		if _, ok := wt.topics[t]; !ok {
			if err := wt.refreshTopic(t, loud); err != nil {
				return err
			}
		}
	}
	return nil
}

func (wt *watcher) refreshTopic(topic string, loud bool) error {
	p := wt.c.paths.Topic(topic)
	if wt.armed[p] {
		return nil // its watch tells
	}
	data, _, ch, err := wt.c.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // removed: the list's watch tells
	}
	if err != nil {
		return err
	}
	wt.arm(p, ch)
	ids, bad := partitions.DecodeIDs(data)
	if bad != nil {
		if loud {
			wt.emit(change{Kind: "corrupt", Topic: topic, Detail: bad.Error()})
		}
		ids = nil
	}
	old := wt.topics[topic]
	wt.topics[topic] = ids
	if !loud {
		return nil
	}
	// A topic with no IDs (an emptied node, which members keep: see
	// partset.Read) is no topic of the set.
	switch {
	case len(old) == 0 && len(ids) == 0:
		return nil
	case len(old) == 0:
		wt.emit(change{Kind: "topic-added", Topic: topic, IDs: string(partitions.EncodeIDs(ids))})
		return nil
	case len(ids) == 0 && bad == nil:
		wt.emit(change{Kind: "topic-removed", Topic: topic, IDs: string(partitions.EncodeIDs(old))})
		return nil
	}
	if added := partitions.Subtract(ids, old); len(added) > 0 {
		wt.emit(change{Kind: "added", Topic: topic, IDs: string(partitions.EncodeIDs(added))})
	}
	if removed := partitions.Subtract(old, ids); len(removed) > 0 {
		wt.emit(change{Kind: "removed", Topic: topic, IDs: string(partitions.EncodeIDs(removed))})
	}
	return nil
}

func (wt *watcher) refreshOwners(loud bool) error {
	names, err := wt.children(wt.c.paths.Owners())
	if err != nil {
		return err
	}
	now, newNames := readNew(names, wt.owners, func(n string) string {
		data, _, _ := wt.c.conn.Get(wt.c.paths.Owners() + "/" + n)
		return string(data)
	})
	var lines []change
	for _, n := range slices.Sorted(maps.Keys(wt.owners)) {
		if _, ok := now[n]; !ok {
			lines = append(lines, change{Kind: "released", Partition: n, Member: wt.owners[n]})
		}
	}
	for _, n := range newNames {
		lines = append(lines, change{Kind: "claimed", Partition: n, Member: now[n]})
	}
	wt.owners = now
	if loud {
		for _, l := range coalesce(lines) {
			wt.emit(l)
		}
	}
	return nil
}

// readNew returns names, a fresh listing, each with its value: the one in
// seen, or, for the names not in seen (returned too, in order), what read
// returns, the reads pipelined.
func readNew(names []string, seen map[string]string, read func(name string) string) (map[string]string, []string) {
	now := make(map[string]string, len(names))
	var newNames []string
	for _, n := range names {
		if v, ok := seen[n]; ok {
			now[n] = v
		} else {
			newNames = append(newNames, n)
		}
	}
	values := make([]string, len(newNames))
	inflight.Do(len(newNames), func(i int) { values[i] = read(newNames[i]) })
	for i, n := range newNames {
		now[n] = values[i]
	}
	return now, newNames
}

// coalesce folds claims of one member on one topic into one line, so that
// a member taking 500 partitions prints one line, not 500.
func coalesce(lines []change) []change {
	type key struct{ kind, member, topic string }
	ids := map[key][]int32{}
	var order []key
	for _, l := range lines {
		p, err := rebalance.Parse(l.Partition)
		if err != nil {
			continue
		}
		k := key{l.Kind, l.Member, p.Topic}
		if _, ok := ids[k]; !ok {
			order = append(order, k)
		}
		ids[k] = append(ids[k], p.ID)
	}
	out := make([]change, 0, len(order))
	for _, k := range order {
		slices.Sort(ids[k])
		out = append(out, change{Kind: k.kind, Member: k.member, Topic: k.topic, IDs: string(partitions.EncodeIDs(ids[k]))})
	}
	return out
}

func (wt *watcher) emit(c change) {
	c.Time = time.Now().UTC().Format(time.RFC3339Nano)
	if wt.json {
		_ = encodeJSON(wt.out, c, false) // as fmt.Fprint to the terminal: nothing to do on failure
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Time, c.Kind)
	if c.Member != "" {
		fmt.Fprintf(&b, " %s", c.Member)
	}
	if c.Topic != "" {
		fmt.Fprintf(&b, " %s:%s", c.Topic, c.IDs)
	}
	if c.Detail != "" {
		fmt.Fprintf(&b, " (%s)", c.Detail)
	}
	fmt.Fprintln(wt.out, b.String())
}
