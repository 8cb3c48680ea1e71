package assignment

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Head is the record's head node, <root>/groups/<group>/assignment: what
// the record was computed for, and where each member's share is.
type Head struct {
	// Generation counts the records written: 1 for the first, and one
	// more for each record written over the one before. The nodes a
	// record creates carry it in their names ([NodeName]).
	Generation int64
	// MembersZxid and PartitionsZxid are the zxids of the member view
	// and of the partition view the record was computed for
	// (membership.View and partitions.View).
	MembersZxid, PartitionsZxid int64
	// Members are the members the record was computed for, sorted by
	// name, with their inputs and their share nodes.
	Members []Entry
}

// Entry is one member of a [Head].
type Entry struct {
	rebalance.Member        // its name, weight and drained flag, as computed for
	Node             string // its share node, a child of the head; "" when it owns nothing
	Sum              uint64 // the share node's [Sum], which its name holds; 0 when it has none
	Count            int    // the partitions it owns
}

// Of returns member's entry, and whether h has one.
func (h Head) Of(member string) (Entry, bool) {
	lo, hi := 0, len(h.Members)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.Members[m].Name < member {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(h.Members) && h.Members[lo].Name == member {
		return h.Members[lo], true
	}
	return Entry{}, false
}

// headMagic starts a head's data, with the format's version,
// headFormat.
const (
	headMagic  = "zkalloc-assignment 1\n"
	headFormat = 1
)

// appendHead writes h: the magic line, "g <generation> <members zxid>
// <partitions zxid>", then one line per member, "m <weight> <drained:
// 0|1> <node|-> <count> <name>", the name last since it may hold spaces.
// The node's name holds its sum.
func appendHead(b []byte, h Head) []byte {
	b = append(b, headMagic...)
	b = append(b, "g "...)
	b = strconv.AppendInt(b, h.Generation, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.MembersZxid, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, h.PartitionsZxid, 10)
	b = append(b, '\n')
	for _, e := range h.Members {
		b = append(b, "m "...)
		b = strconv.AppendInt(b, int64(e.Weight), 10)
		if e.Drained {
			b = append(b, " 1 "...)
		} else {
			b = append(b, " 0 "...)
		}
		if e.Node == "" {
			b = append(b, '-')
		} else {
			b = append(b, e.Node...)
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Count), 10)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, '\n')
	}
	return b
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		b = append(b, digits[v>>uint(i)&0xf])
	}
	return b
}

// DecodeHead reads a head node's data as [Encode] writes it. It checks
// the format's version, the numbers, every member name ([validMember])
// and weight, that members are sorted and distinct, that a member has a
// node exactly when it owns partitions, that node names are as
// [NodeName] makes them for a generation at most the head's (the
// entry's Sum is the one its node's name holds), and that
// the counts add up to at most [MaxPartitions]. A head of a later format
// ("zkalloc-assignment <n>", n above this version's) is an error wrapping
// [ErrNewerFormat]; anything else is an error wrapping [ErrInvalid].
func DecodeHead(data []byte) (Head, error) {
	s := string(data)
	rest, ok := strings.CutPrefix(s, headMagic)
	if !ok {
		if v, err := laterFormat(s); err == nil {
			return Head{}, fmt.Errorf("%w: format %d, this version reads %d", ErrNewerFormat, v, headFormat)
		}
		return Head{}, fmt.Errorf("%w head: does not start with %q", ErrInvalid, strings.TrimSpace(headMagic))
	}
	if !strings.HasSuffix(rest, "\n") {
		return Head{}, fmt.Errorf("%w head: the last line is not ended", ErrInvalid)
	}
	lines := strings.Split(rest[:len(rest)-1], "\n")
	var h Head
	f := strings.Fields(lines[0])
	if len(f) != 4 || f[0] != "g" || strings.Join(f, " ") != lines[0] {
		return Head{}, fmt.Errorf("%w head: generation line %.60q", ErrInvalid, lines[0])
	}
	var err error
	if h.Generation, err = natural(f[1]); err != nil || h.Generation == 0 {
		return Head{}, fmt.Errorf("%w head: generation %q", ErrInvalid, f[1])
	}
	if h.MembersZxid, err = natural(f[2]); err != nil {
		return Head{}, fmt.Errorf("%w head: members zxid %q", ErrInvalid, f[2])
	}
	if h.PartitionsZxid, err = natural(f[3]); err != nil {
		return Head{}, fmt.Errorf("%w head: partitions zxid %q", ErrInvalid, f[3])
	}
	h.Members = make([]Entry, 0, len(lines)-1)
	total := 0
	for _, line := range lines[1:] {
		e, err := parseEntry(line, h.Generation)
		if err != nil {
			return Head{}, fmt.Errorf("head: %w", err)
		}
		if n := len(h.Members); n > 0 && h.Members[n-1].Name >= e.Name {
			return Head{}, fmt.Errorf("%w head: member %q out of order or listed twice", ErrInvalid, e.Name)
		}
		if total += e.Count; total > MaxPartitions {
			return Head{}, fmt.Errorf("%w head: more than %d partitions", ErrInvalid, MaxPartitions)
		}
		h.Members = append(h.Members, e)
	}
	return h, nil
}

// laterFormat returns the format of a head that starts as a later one
// than headFormat would: "zkalloc-assignment <n>" and a line's end, n a
// natural number above headFormat.
func laterFormat(s string) (int64, error) {
	line, _, ok := strings.Cut(s, "\n")
	v, found := strings.CutPrefix(line, "zkalloc-assignment ")
	if !ok || !found {
		return 0, ErrInvalid
	}
	n, err := natural(v)
	if err != nil || n <= headFormat {
		return 0, ErrInvalid
	}
	return n, nil
}

// parseEntry reads one member line of a head of generation gen.
func parseEntry(line string, gen int64) (Entry, error) {
	var f [5]string
	rest := line
	for i := range f {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, " "); !ok {
			return Entry{}, fmt.Errorf("%w: member line %.60q", ErrInvalid, line)
		}
	}
	var e Entry
	e.Name = rest
	if f[0] != "m" {
		return Entry{}, fmt.Errorf("%w: member line %.60q", ErrInvalid, line)
	}
	if err := validMember(e.Name); err != nil {
		return Entry{}, err
	}
	w, err := natural(f[1])
	if err != nil || w > rebalance.MaxWeight {
		return Entry{}, fmt.Errorf("%w: weight %q of %q", ErrInvalid, f[1], e.Name)
	}
	e.Weight = int(w)
	switch f[2] {
	case "0":
	case "1":
		e.Drained = true
	default:
		return Entry{}, fmt.Errorf("%w: drained flag %q of %q", ErrInvalid, f[2], e.Name)
	}
	count, err := natural(f[4])
	if err != nil || count > MaxPartitions {
		return Entry{}, fmt.Errorf("%w: count %q of %q", ErrInvalid, f[4], e.Name)
	}
	e.Count = int(count)
	if f[3] == "-" {
		if e.Count != 0 {
			return Entry{}, fmt.Errorf("%w: %q owns %d partitions and has no node", ErrInvalid, e.Name, e.Count)
		}
		return e, nil
	}
	g, sum, ok := ParseNodeName(f[3])
	if !ok || g > gen || e.Count == 0 {
		return Entry{}, fmt.Errorf("%w: node %q of %q (with %d partitions, in generation %d)", ErrInvalid, f[3], e.Name, e.Count, gen)
	}
	e.Node, e.Sum = f[3], sum
	return e, nil
}

// natural reads a decimal integer ≥ 0 without a sign or leading zeros.
func natural(s string) (int64, error) {
	if s == "" || len(s) > 1 && s[0] == '0' || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%w number %q", ErrInvalid, s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// validMember checks a member name as a head or a share holds it: a
// valid node name ([rebalance.ValidateName]) of at most
// [rebalance.MaxNameLen] bytes, without a newline (which ValidateName
// refuses already, as a control character).
func validMember(name string) error {
	if err := rebalance.ValidateName(name); err != nil {
		return err
	}
	if len(name) > rebalance.MaxNameLen {
		return fmt.Errorf("%w name %.40q...: %d bytes, longer than %d", ErrInvalid, name, len(name), rebalance.MaxNameLen)
	}
	return nil
}
