package assignment

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// ErrInvalid is the error malformed data or input wraps: it is
// [rebalance.ErrInvalid], so that errors.Is finds it either way.
var ErrInvalid = rebalance.ErrInvalid

// ErrNewerFormat is the error [DecodeHead] returns for a head of a later
// format than this version's ("zkalloc-assignment <n>" with n above 1),
// as a newer version of zkalloc writes it. It does not wrap
// [ErrInvalid]: such a head is no broken record, and a member must not
// write over it, but wait for a head it can read (docs/sticky.md,
// "Mixed versions").
var ErrNewerFormat = errors.New("assignment: head of a newer format than this version reads")

// ErrStale is wrapped, with [ErrInvalid], by [DecodeShare] when a share
// node's data does not hash to what the head says.
var ErrStale = errors.New("assignment: share node does not match the head")

// ErrTooLarge is wrapped by [Encode] when the head or a share node would
// be larger than [MaxNodeBytes].
var ErrTooLarge = errors.New("assignment: node too large")

// MaxNodeBytes bounds each node's data, the head's and each share's: half
// of ZooKeeper's default request limit (jute.maxbuffer, 1 MiB), so that a
// node fits in a multi with others and a member's reply buffer.
const MaxNodeBytes = 512_000

// MaxPartitions bounds the partitions of a record, as
// partitions.MaxPartitions bounds a set: 2^20.
const MaxPartitions = 1 << 20

// Input is what a record is computed for and holds.
type Input struct {
	// MembersZxid and PartitionsZxid are the zxids of the member and
	// partition views the placement was computed for.
	MembersZxid, PartitionsZxid int64
	// Members are the members it was computed for (any order): every
	// owner of the placement must be one of them.
	Members []rebalance.Member
	// Placement is the assignment, as [rebalance.Sticky]'s Result.Next
	// gives it: every partition has an owner.
	Placement rebalance.Placement
}

// Node is a share node to create: its name (a child of the head) and
// data.
type Node struct {
	Name string
	Data []byte
}

// Encoded is a record ready to write.
type Encoded struct {
	Head     Head
	HeadData []byte
	// Create lists the share nodes to create before the head is written,
	// sorted by name: those of the members whose share changed since
	// prev. A member whose share is the same keeps its node.
	Create []Node
	// Stale lists prev's share nodes that the new head no longer names,
	// sorted: to delete once the head is written.
	Stale []string
}

// NodeName is the name of a share node created by the record of
// generation gen, whose data has the [Sum] sum: "<gen>-<sum, 16 hex
// digits>". Share nodes are never written over, and their names are
// their content: two members writing the same generation from the same
// inputs create the same nodes with the same data (the second create
// finds the node there, and may go on), and from different inputs
// different nodes, so a writer never finds a node of its own name with
// other data. A reader that holds a head reads exactly the shares it
// names, or finds them gone (the head is no longer current), never
// changed.
func NodeName(gen int64, sum uint64) string {
	return string(appendHex16(append(strconv.AppendInt(nil, gen, 10), '-'), sum))
}

// ParseNodeName returns the generation and sum of a share node's name,
// and whether name is one [NodeName] makes.
func ParseNodeName(name string) (gen int64, sum uint64, ok bool) {
	g, h, ok := strings.Cut(name, "-")
	if !ok || len(h) != 16 {
		return 0, 0, false
	}
	gen, err := natural(g)
	if err != nil || gen == 0 {
		return 0, 0, false
	}
	for i := 0; i < len(h); i++ { // lower-case hex only: one name per sum
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, 0, false
		}
	}
	sum, err = strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, 0, false
	}
	return gen, sum, true
}

// Orphans returns the children of the head's node that no record can
// name any more, sorted: share nodes of a generation at or below h's
// that h does not name (left by a writer whose head's compare-and-set
// failed, or by one that stopped before deleting its stale nodes), and
// children that are not share nodes. Nodes of a later generation are
// kept: a member may be writing the next record now.
func Orphans(h Head, children []string) []string {
	named := make(map[string]bool, len(h.Members))
	for _, e := range h.Members {
		named[e.Node] = true
	}
	var out []string
	for _, c := range children {
		if g, _, ok := ParseNodeName(c); ok && (g > h.Generation || named[c]) {
			continue
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Encode lays in out as the record that follows prev (the zero Head
// when there is none): its head, of generation prev.Generation+1, the
// share nodes to create and prev's nodes it no longer names. It returns
// an error wrapping [ErrInvalid] for an invalid member (name, weight,
// listed twice) or placement (lengths, indices, order, an owner that is
// not a member, a partition with no owner, a home that is its owner or
// not a valid name), and one wrapping [ErrTooLarge] naming the node and
// its size if the head or a share would exceed [MaxNodeBytes]. It does
// not modify in or prev and is safe for concurrent use.
func Encode(in Input, prev Head) (Encoded, error) {
	pl := in.Placement
	if err := checkPlacement(pl); err != nil {
		return Encoded{}, err
	}
	if in.MembersZxid < 0 || in.PartitionsZxid < 0 {
		return Encoded{}, fmt.Errorf("%w input: negative zxid", ErrInvalid)
	}
	h := Head{Generation: prev.Generation + 1, MembersZxid: in.MembersZxid, PartitionsZxid: in.PartitionsZxid}
	h.Members = make([]Entry, len(in.Members))
	for i, m := range in.Members {
		if err := validMember(m.Name); err != nil {
			return Encoded{}, fmt.Errorf("member: %w", err)
		}
		if m.Weight < 0 || m.Weight > rebalance.MaxWeight {
			return Encoded{}, fmt.Errorf("%w member %q: weight %d outside 0 to %d", ErrInvalid, m.Name, m.Weight, rebalance.MaxWeight)
		}
		h.Members[i].Member = m
	}
	slices.SortFunc(h.Members, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(h.Members); i++ {
		if h.Members[i-1].Name == h.Members[i].Name {
			return Encoded{}, fmt.Errorf("%w member %q listed twice", ErrInvalid, h.Members[i].Name)
		}
	}
	// member[k] is the index in h.Members of Names[k], or -1.
	member := make([]int, len(pl.Names))
	for k, name := range pl.Names {
		i, ok := slices.BinarySearchFunc(h.Members, name, func(e Entry, n string) int { return strings.Compare(e.Name, n) })
		member[k] = -1
		if ok {
			member[k] = i
		}
	}
	// Each member's partitions, in one array, by counting.
	start := make([]int, len(h.Members)+1)
	for i, o := range pl.Owner {
		if o == rebalance.Nobody {
			return Encoded{}, fmt.Errorf("%w placement: %s has no owner", ErrInvalid, pl.Parts[i])
		}
		if member[o] < 0 {
			return Encoded{}, fmt.Errorf("%w placement: owner %q of %s is not a member", ErrInvalid, pl.Names[o], pl.Parts[i])
		}
		start[member[o]+1]++
	}
	for i := range h.Members {
		start[i+1] += start[i]
	}
	own := make([]int32, len(pl.Parts)) // indices in pl.Parts, by member
	next := slices.Clone(start[:len(h.Members)])
	for i, o := range pl.Owner {
		m := member[o]
		own[next[m]] = int32(i)
		next[m]++
	}

	var out Encoded
	var buf []byte
	for i := range h.Members {
		e := &h.Members[i]
		lo, hi := start[i], start[i+1]
		if e.Count = hi - lo; e.Count == 0 {
			continue
		}
		buf = appendShare(buf[:0], pl.Parts, own[lo:hi], pl.Home, pl.Names)
		if len(buf) > MaxNodeBytes {
			return Encoded{}, fmt.Errorf("%w: the share of %q, %d partitions, takes %d bytes, over %d", ErrTooLarge, e.Name, e.Count, len(buf), MaxNodeBytes)
		}
		e.Sum = Sum(buf)
		if p, ok := prev.Of(e.Name); ok && p.Node != "" && p.Sum == e.Sum && p.Count == e.Count {
			e.Node = p.Node
			continue
		}
		e.Node = NodeName(h.Generation, e.Sum)
		out.Create = append(out.Create, Node{Name: e.Node, Data: slices.Clone(buf)})
	}
	slices.SortFunc(out.Create, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	out.HeadData = appendHead(nil, h)
	if len(out.HeadData) > MaxNodeBytes {
		return Encoded{}, fmt.Errorf("%w: the head, %d members, takes %d bytes, over %d", ErrTooLarge, len(h.Members), len(out.HeadData), MaxNodeBytes)
	}
	named := make(map[string]bool, len(h.Members))
	for _, e := range h.Members {
		named[e.Node] = true
	}
	for _, e := range prev.Members {
		if e.Node != "" && !named[e.Node] {
			out.Stale = append(out.Stale, e.Node)
		}
	}
	slices.Sort(out.Stale)
	out.Head = h
	return out, nil
}

// checkPlacement checks what [rebalance.Placement.Validate] does, and
// what a record needs besides: at most [MaxPartitions] partitions, names
// a head can hold, and no home equal to its owner (Sticky's canonical
// form, which Decode gives back).
func checkPlacement(pl rebalance.Placement) error {
	if n := len(pl.Parts); n > MaxPartitions {
		return fmt.Errorf("%w placement: %d partitions, more than %d", ErrInvalid, n, MaxPartitions)
	}
	if err := pl.Validate(); err != nil {
		return err
	}
	for _, name := range pl.Names {
		if err := validMember(name); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	for i, o := range pl.Owner {
		if pl.Home != nil && o != rebalance.Nobody && pl.Home[i] == o {
			return fmt.Errorf("%w placement: home %d of %s out of range or its owner", ErrInvalid, o, pl.Parts[i])
		}
	}
	return nil
}

// Decode reads the whole record: the head h and the data of every share
// node it names, by name in shares. It returns the placement the record
// holds, canonical as [rebalance.Sticky] makes it (Names sorted and
// holding only the names referred to; Home as long as Parts, [rebalance.Nobody]
// where a partition has no home), so a placement Sticky returned survives [Encode] then Decode
// exactly. Errors are [DecodeShare]'s, and one wrapping [ErrInvalid] for
// a missing node or a partition owned twice.
func Decode(h Head, shares map[string][]byte) (rebalance.Placement, error) {
	total := 0
	for _, e := range h.Members {
		total += e.Count
	}
	if total > MaxPartitions {
		return rebalance.Placement{}, fmt.Errorf("%w record: more than %d partitions", ErrInvalid, MaxPartitions)
	}
	// The shares, and every name they refer to.
	type owned struct {
		name  string
		share Share
	}
	all := make([]owned, 0, len(h.Members))
	index := make(map[string]int32)
	for _, e := range h.Members {
		if e.Node == "" {
			continue
		}
		data, ok := shares[e.Node]
		if !ok {
			return rebalance.Placement{}, fmt.Errorf("%w record: no data for %q's node %s", ErrInvalid, e.Name, e.Node)
		}
		sh, err := DecodeShare(e, data)
		if err != nil {
			return rebalance.Placement{}, err
		}
		all = append(all, owned{e.Name, sh})
		index[e.Name] = 0
		for _, hm := range sh.Home {
			if hm != "" {
				index[hm] = 0
			}
		}
	}
	pl := rebalance.Placement{Names: slices.Sorted(maps.Keys(index))}
	for i, n := range pl.Names {
		index[n] = int32(i)
	}
	// Each topic's partitions with their owner and home: a share lists
	// its partitions by topic, so a topic is looked up once per share,
	// not once per partition, and no string is compared per partition.
	type cell struct{ id, owner, home int32 }
	topicOf := make(map[string]int)
	var topics []string
	var cells [][]cell
	for _, o := range all {
		owner := index[o.name]
		for i := 0; i < len(o.share.Owned); {
			topic := o.share.Owned[i].Topic
			t, ok := topicOf[topic]
			if !ok {
				t = len(topics)
				topicOf[topic] = t
				topics = append(topics, topic)
				cells = append(cells, nil)
			}
			for ; i < len(o.share.Owned) && o.share.Owned[i].Topic == topic; i++ {
				c := cell{o.share.Owned[i].ID, owner, rebalance.Nobody}
				if o.share.Home != nil && o.share.Home[i] != "" {
					c.home = index[o.share.Home[i]]
				}
				cells[t] = append(cells[t], c)
			}
		}
	}
	order := make([]int, len(topics))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(topics[a], topics[b]) })
	pl.Parts = make([]rebalance.Partition, 0, total)
	pl.Owner = make([]int32, 0, total)
	pl.Home = make([]int32, 0, total)
	for _, t := range order {
		cs := sortCells(cells[t], func(c cell) int32 { return c.id })
		for i, c := range cs {
			if i > 0 && cs[i-1].id == c.id {
				p := rebalance.Partition{Topic: topics[t], ID: c.id}
				return rebalance.Placement{}, fmt.Errorf("%w record: %s owned by both %q and %q", ErrInvalid, p, pl.Names[cs[i-1].owner], pl.Names[c.owner])
			}
			pl.Parts = append(pl.Parts, rebalance.Partition{Topic: topics[t], ID: c.id})
			pl.Owner = append(pl.Owner, c.owner)
			pl.Home = append(pl.Home, c.home)
		}
	}
	return pl, nil
}

// sortCells sorts cs by the non-negative key id: by placing each cell at
// its ID's offset when the IDs are dense (a topic's IDs usually are: at
// most twice as many slots as cells), in one pass and with no
// comparison; else with a sort. Cells with equal keys (an invalid
// record) end up next to each other, for the caller to report.
func sortCells[C any](cs []C, id func(C) int32) []C {
	if len(cs) < 2 {
		return cs
	}
	lo, hi := id(cs[0]), id(cs[0])
	for _, c := range cs {
		lo, hi = min(lo, id(c)), max(hi, id(c))
	}
	span := int64(hi) - int64(lo) + 1
	if span > 2*int64(len(cs)) {
		slices.SortFunc(cs, func(a, b C) int { return cmp.Compare(id(a), id(b)) })
		return cs
	}
	slot := make([]int32, span) // 1 + the index in cs of the cell of each ID
	for i, c := range cs {
		k := id(c) - lo
		if slot[k] != 0 { // a duplicate: the record is invalid, sort to report it
			slices.SortFunc(cs, func(a, b C) int { return cmp.Compare(id(a), id(b)) })
			return cs
		}
		slot[k] = int32(i) + 1
	}
	out := make([]C, 0, len(cs))
	for _, k := range slot {
		if k != 0 {
			out = append(out, cs[k-1])
		}
	}
	return out
}
