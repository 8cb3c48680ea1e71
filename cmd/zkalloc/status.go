package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/inflight"
	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// memberStatus is one member, from its node.
type memberStatus struct {
	Name     string `json:"name"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Session  string `json:"session"` // hex, as ZooKeeper's tools show it
	Strategy string `json:"strategy,omitempty"`
	Version  string `json:"version,omitempty"`
	Started  string `json:"started,omitempty"` // RFC 3339
	Age      string `json:"age"`               // since the node was created, in this session
	Weight   int    `json:"weight"`            // from its node; 1 if it gives none
	Drained  bool   `json:"drained"`           // a drain mark names it (zkalloc drain)
	Owns     int    `json:"owns"`              // the claims it holds
	// InRecord is the partitions the assignment record gives it; absent
	// if there is no record or it is not in it.
	InRecord *int `json:"in_record,omitempty"`
}

// recordStatus is the head of the group's assignment record (the sticky
// strategy's): its generation and the zxids of the member and partition
// views it was computed for, hex as ZooKeeper's tools show zxids.
type recordStatus struct {
	Generation     int64  `json:"generation,omitempty"`
	MembersZxid    string `json:"members_zxid,omitempty"`
	PartitionsZxid string `json:"partitions_zxid,omitempty"`
	Error          string `json:"error,omitempty"` // the head cannot be read
}

// handoffStatus is a partition whose claim is not (yet) where the
// members' strategy puts it.
type handoffStatus struct {
	Partition string `json:"partition"`
	From      string `json:"from,omitempty"` // the member holding the claim; "" if none
	To        string `json:"to"`             // the member the strategy gives it to
	// Age is how long the group has been on its current members and set
	// (see groupStatus.Changed); "" if unknown.
	Age string `json:"age,omitempty"`
	// Held is, when no claim stands, the member whose hold record still
	// keeps the partition (see groupStatus.RecordOnly).
	Held string `json:"held,omitempty"`
}

// from names who h is handed off from, for people: the claim's holder,
// else the member whose hold record alone keeps it, else none.
func (h handoffStatus) from(none string) string {
	switch {
	case h.From != "":
		return h.From
	case h.Held != "":
		return h.Held + " (hold record only)"
	}
	return none
}

// groupStatus is what status prints; with -json, as is.
type groupStatus struct {
	Group      string            `json:"group"`
	Path       string            `json:"path"`
	Members    []memberStatus    `json:"members"`
	Partitions map[string]string `json:"partitions"` // topic → compact IDs, "0-63,70"
	Corrupt    []string          `json:"corrupt,omitempty"`
	Owners     map[string]string `json:"owners"`  // "topic:id" → member
	Unowned    []string          `json:"unowned"` // in the set, with no claim
	Strays     []string          `json:"strays,omitempty"`
	// Seats are the seats of members that left within their
	// DepartureDelay; Paused the partitions the members keep for them.
	Seats  []string `json:"seats,omitempty"`
	Paused []string `json:"paused,omitempty"`
	// DrainedAbsent are the drain marks (drained/<member>) of names that
	// are not live members; a live member's is its Drained.
	DrainedAbsent []drainMark `json:"drained_absent,omitempty"`
	// Record is the assignment record's head, if there is one.
	Record *recordStatus `json:"record,omitempty"`
	// Strategy is the members' common strategy; Handoffs is known only
	// when it is a built-in stateless one (the command can run it), or
	// the sticky strategy with an assignment record computed for the
	// current members and set (the command reads whom it gives what);
	// HandoffsUnknown says why not, when not.
	Strategy        string          `json:"strategy,omitempty"`
	HandoffsKnown   bool            `json:"handoffs_known"`
	HandoffsUnknown string          `json:"handoffs_unknown,omitempty"`
	Handoffs        []handoffStatus `json:"handoffs"`
	// The hold records (holds/<topic>:<id>) worth a look, each list in
	// partition order (see judgeHolds): RecordOnly those of a live session
	// with no claim beside them (the claim was deleted from outside, or the
	// holder is releasing; nobody else takes the partition meanwhile),
	// EndedHolds those whose session has ended (the next owner replaces
	// them), BadHolds those members cannot read.
	RecordOnly []holdStatus `json:"record_only,omitempty"`
	EndedHolds []holdStatus `json:"ended_holds,omitempty"`
	BadHolds   []holdStatus `json:"bad_holds,omitempty"`
	// Changed is when the group's members or set last changed, as far as
	// ZooKeeper dates it (RFC 3339; see datedChange); "" if unknown.
	Changed string `json:"changed,omitempty"`
	// Problems are what status -check found, one a line; only with -check.
	Problems []string `json:"problems,omitempty"`

	changed time.Time // Changed; zero if unknown
}

// builtins are the strategies status can run to tell hand-offs in
// progress.
var builtins = map[string]rebalance.Strategy{}

func init() {
	for _, s := range []rebalance.Strategy{rebalance.Balanced, rebalance.Range, rebalance.RoundRobin} {
		builtins[s.Name()] = s
	}
}

// readStatus reads the group: members, the set and the claims.
//
// A hand-off is in progress for a partition when the owner the members'
// strategy gives it, for the members and set read, is not the member that
// holds its claim: the old owner has not released it yet (its consumer
// has not acked), or the new one has not claimed it yet. Members that
// have not yet computed the newest view, or debounce it (Settle), show up
// the same way for a moment.
//
// The hold records are read first, before the members and the claims: a
// record's session is then called ended only if it had ended by the time
// the members were read (a member that joined meanwhile cannot hold it);
// a record read just before its holder released it (the claim and the
// record go together) shows as held by record only, as its label allows.
func readStatus(c *client) (*groupStatus, error) {
	if err := c.checkGroup(); err != nil {
		return nil, err
	}
	st := &groupStatus{Group: c.paths.Group, Path: c.paths.Dir(), Partitions: map[string]string{}, Owners: map[string]string{}, Unowned: []string{}, Handoffs: []handoffStatus{}}
	holds, err := readHolds(c)
	if err != nil {
		return nil, err
	}
	sessions := map[string]int64{} // member → its node's session

	nodes, err := liveMembers(c.conn, c.paths)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	strategies := map[string]bool{}
	var dates datedChange
	for _, lm := range nodes {
		sessions[lm.name] = lm.session
		m := memberStatus{Name: lm.name, Session: sessionHex(lm.session)}
		m.Host, m.PID, m.Strategy, m.Version, m.Started = lm.info.Host, lm.info.PID, lm.info.Strategy, lm.info.Version, lm.info.Started
		m.Weight = lm.info.EffectiveWeight()
		strategies[m.Strategy] = true
		created := time.UnixMilli(lm.stat.Ctime)
		m.Age = now.Sub(created).Round(time.Second).String()
		dates.saw(lm.stat.Czxid, lm.stat.Ctime)
		st.Members = append(st.Members, m)
	}
	if st.Members == nil {
		st.Members = []memberStatus{}
	}

	set, corrupt, err := partset.Read(c.conn, c.paths)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	for _, e := range corrupt {
		st.Corrupt = append(st.Corrupt, e.Error())
	}
	var all []rebalance.Partition
	for _, topic := range slices.Sorted(maps.Keys(set)) {
		st.Partitions[topic] = string(partitions.EncodeIDs(set[topic]))
		for _, id := range set[topic] {
			all = append(all, rebalance.Partition{Topic: topic, ID: id})
		}
	}

	claims, err := children(c.conn, c.paths.Owners())
	if err != nil {
		return nil, err
	}
	owners := make([]nodeRead, len(claims))
	inflight.Do(len(claims), func(i int) {
		owners[i].data, owners[i].stat, owners[i].err = c.conn.Get(c.paths.Owners() + "/" + claims[i])
	})
	owner := map[rebalance.Partition]string{}
	for i, name := range claims {
		r := owners[i]
		if errors.Is(r.err, zk.ErrNoNode) {
			continue
		}
		if r.err != nil {
			return nil, r.err
		}
		dates.claimed(r.stat.Czxid, r.stat.Ctime)
		p, err := rebalance.Parse(name)
		if err != nil {
			st.Strays = append(st.Strays, name)
			continue
		}
		owner[p] = string(r.data)
		st.Owners[name] = string(r.data)
		if _, ok := set[p.Topic]; !ok || !slices.Contains(set[p.Topic], p.ID) {
			st.Strays = append(st.Strays, name) // claimed, not in the set: being released
		}
	}
	owns := map[string]int{}
	for _, m := range owner {
		owns[m]++
	}
	for i := range st.Members {
		st.Members[i].Owns = owns[st.Members[i].Name]
	}
	for _, p := range all {
		if _, ok := owner[p]; !ok {
			st.Unowned = append(st.Unowned, p.String())
		}
	}
	heldBy := map[rebalance.Partition]string{} // the member, by record only
	st.RecordOnly, st.EndedHolds, st.BadHolds = judgeHolds(holds, sessions, func(p rebalance.Partition) bool {
		_, ok := owner[p]
		return ok
	})
	for _, h := range st.RecordOnly {
		p, _ := rebalance.Parse(h.Partition)
		heldBy[p] = h.Member
	}

	if len(strategies) == 1 {
		for s := range strategies {
			st.Strategy = s
		}
	}
	// Members with a DepartureDelay compute over the live members and the
	// seats of those that left within it, whose partitions nobody takes.
	seats, err := children(c.conn, c.paths.Seats())
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, m := range st.Members {
		live[m.Name] = true
	}
	for _, name := range seats {
		if !live[name] && rebalance.ValidateName(name) == nil {
			st.Seats = append(st.Seats, name)
		}
	}
	head, hasHead, err := readDrainsAndRecord(c, st, live)
	if err != nil {
		return nil, err
	}
	if err := dates.read(c, st.Seats, st.Strategy == stickyStrategy, markNames(st)); err != nil {
		return nil, err
	}
	st.changed = dates.when()
	age := ""
	if !st.changed.IsZero() {
		st.Changed = st.changed.UTC().Format(time.RFC3339)
		age = max(now.Sub(st.changed), 0).Round(time.Second).String()
	}
	// The target: whom the members' strategy gives each partition, to
	// the live members and the seats.
	var target map[string][]rebalance.Partition
	switch s, ok := builtins[st.Strategy]; {
	case len(st.Members) == 0:
		st.HandoffsUnknown = "no member runs"
	case ok:
		memberNames := make([]string, 0, len(st.Members)+len(st.Seats))
		for _, m := range st.Members {
			memberNames = append(memberNames, m.Name)
		}
		memberNames = append(memberNames, st.Seats...)
		slices.Sort(memberNames)
		if target, err = rebalance.Compute(s, memberNames, all); err != nil {
			target = nil
			st.HandoffsUnknown = fmt.Sprintf("the %s strategy failed: %v", st.Strategy, err)
		}
	case st.Strategy == stickyStrategy && !hasHead:
		st.HandoffsUnknown = "the members run the sticky strategy, and the group has no assignment record yet"
	case st.Strategy == stickyStrategy:
		target, st.HandoffsUnknown, err = stickyTarget(c, head, all, live, st.Seats)
		if err != nil {
			return nil, err
		}
	default:
		st.HandoffsUnknown = "the members run no common strategy the command knows"
	}
	if target != nil {
		st.HandoffsKnown = true
		for _, m := range slices.Sorted(maps.Keys(target)) {
			if !live[m] {
				for _, p := range target[m] {
					st.Paused = append(st.Paused, p.String())
				}
				continue
			}
			for _, p := range target[m] {
				if owner[p] != m {
					st.Handoffs = append(st.Handoffs, handoffStatus{Partition: p.String(), From: owner[p], To: m, Held: heldBy[p], Age: age})
				}
			}
		}
		slices.SortFunc(st.Paused, func(a, b string) int {
			pa, _ := rebalance.Parse(a)
			pb, _ := rebalance.Parse(b)
			return rebalance.Compare(pa, pb)
		})
		slices.SortFunc(st.Handoffs, func(a, b handoffStatus) int {
			pa, _ := rebalance.Parse(a.Partition)
			pb, _ := rebalance.Parse(b.Partition)
			return rebalance.Compare(pa, pb)
		})
	}
	return st, nil
}

func status(c *client, o options, w io.Writer) error {
	st, err := readStatus(c)
	if err != nil {
		return err
	}
	if o.check {
		return check(st, o, w)
	}
	if o.json {
		return encodeJSON(w, st, true)
	}
	return printStatus(st, w)
}
