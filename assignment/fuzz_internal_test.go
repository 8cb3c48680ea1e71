package assignment

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// FuzzDecodeHead feeds DecodeHead arbitrary head data, as a foreign or
// broken writer could leave it: no panic; refusals wrap ErrInvalid; an
// accepted head is within its contract (members sorted and valid, a node
// exactly for those that own partitions, node generations at most the
// head's) and is written back byte for byte (a head has one encoding).
func FuzzDecodeHead(f *testing.F) {
	f.Add([]byte("zkalloc-assignment 1\ng 1 0 0\n"))
	f.Add([]byte("zkalloc-assignment 1\ng 3 17 18\nm 1 0 1-6704f7c663d619dc 30 a\nm 2 1 - 0 b c\n"))
	f.Add([]byte("zkalloc-assignment 1\ng 3 17 18\nm 1 0 4-6704f7c663d619dc 30 a\n"))
	f.Add([]byte("zkalloc-assignment 1\ng 3 17 18\nm 1 0 1-6704f7c663d619dc 30 b\nm 1 0 1-6704f7c663d619dD 30 a\n"))
	f.Add([]byte("zkalloc-assignment 1\ng 01 0 0\n"))
	f.Add([]byte("zkalloc-assignment 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHead(data)
		if err != nil {
			if errors.Is(err, ErrInvalid) == errors.Is(err, ErrNewerFormat) {
				t.Fatalf("DecodeHead = %v, want an ErrInvalid or an ErrNewerFormat error", err)
			}
			return
		}
		total := 0
		for i, e := range h.Members {
			if i > 0 && h.Members[i-1].Name >= e.Name {
				t.Fatalf("members not sorted and distinct at %q", e.Name)
			}
			if err := validMember(e.Name); err != nil {
				t.Fatalf("accepted member %q: %v", e.Name, err)
			}
			if (e.Node == "") != (e.Count == 0) {
				t.Fatalf("%q: node %q with %d partitions", e.Name, e.Node, e.Count)
			}
			if g, sum, ok := ParseNodeName(e.Node); e.Node != "" && (!ok || g > h.Generation || sum != e.Sum) {
				t.Fatalf("%q: node %q in generation %d", e.Name, e.Node, h.Generation)
			}
			total += e.Count
		}
		if total > MaxPartitions {
			t.Fatalf("%d partitions accepted", total)
		}
		if got := appendHead(nil, h); string(got) != string(data) {
			t.Fatalf("DecodeHead(%q) then appendHead = %q", data, got)
		}
	})
}

// FuzzDecodeShare feeds DecodeShare arbitrary share data, with an entry
// whose hash matches it (so the parser, not the hash, is what is
// tried): no panic; refusals wrap ErrInvalid; an accepted share holds
// exactly the count, sorted and distinct, valid topics and IDs, homes
// valid names other than the owner, and survives appendShare then
// DecodeShare unchanged.
func FuzzDecodeShare(f *testing.F) {
	f.Add([]byte("o events-00 0-1,3,6-7,9,12-13,15\nh events-00 1-13/6 b\n"), "a", 9)
	f.Add([]byte("o t 0-27/3,1-25/6\n"), "a", 19)
	f.Add([]byte("o t 0-2000000000\n"), "a", 3)
	f.Add([]byte("o t 5\no s 1\n"), "a", 2)
	f.Add([]byte("o t 5\nh t 5 a\n"), "a", 1)
	f.Add([]byte("o t 5\nh t 5 b\nh t 5 c\n"), "a", 1)
	f.Add([]byte("o t 1-9/0\n"), "a", 5)
	f.Add([]byte(""), "a", 0)
	f.Fuzz(func(t *testing.T, data []byte, owner string, count int) {
		e := Entry{Member: rebalance.Member{Name: owner}, Node: NodeName(1, Sum(data)), Sum: Sum(data), Count: count}
		sh, err := DecodeShare(e, data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("DecodeShare = %v, want an ErrInvalid error", err)
			}
			return
		}
		if len(sh.Owned) != count {
			t.Fatalf("%d partitions, count %d", len(sh.Owned), count)
		}
		for i, p := range sh.Owned {
			if rebalance.ValidateTopic(p.Topic) != nil || p.ID < 0 || i > 0 && rebalance.Compare(sh.Owned[i-1], p) >= 0 {
				t.Fatalf("accepted %v after %v", p, sh.Owned[max(i-1, 0)])
			}
			if sh.Home != nil && sh.Home[i] != "" && (sh.Home[i] == owner || validMember(sh.Home[i]) != nil) {
				t.Fatalf("accepted home %q for owner %q", sh.Home[i], owner)
			}
		}
		var names []string
		var home, own []int32
		for k := range sh.Owned {
			own = append(own, int32(k))
		}
		for _, h := range sh.Home {
			k := int32(rebalance.Nobody)
			if h != "" {
				k = int32(len(names))
				names = append(names, h)
			}
			home = append(home, k)
		}
		again := appendShare(nil, sh.Owned, own, home, names)
		e.Sum = Sum(again)
		sh2, err := DecodeShare(e, again)
		if err != nil {
			t.Fatalf("written back as %q: %v", again, err)
		}
		if !slices.Equal(sh.Owned, sh2.Owned) || !slices.Equal(homesOrNil(sh.Home), homesOrNil(sh2.Home)) {
			t.Fatalf("%q written back as %q reads differently", data, again)
		}
	})
}

// homesOrNil returns nil for homes that are all "".
func homesOrNil(h []string) []string {
	for _, s := range h {
		if s != "" {
			return h
		}
	}
	return nil
}

// FuzzIDs: any sorted, distinct, non-negative set of IDs survives
// appendIDs then walkIDs, and a limit below its size refuses it.
func FuzzIDs(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 4})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ids []int32
		id := int64(-1)
		for len(raw) >= 4 {
			id += 1 + int64(binary.BigEndian.Uint32(raw)&0xffff)
			raw = raw[4:]
			if id > 1<<31-1 {
				break
			}
			ids = append(ids, int32(id))
		}
		if len(ids) == 0 {
			return
		}
		enc := appendIDs(nil, ids)
		var got []int32
		if _, err := walkIDs(string(enc), len(ids), func(id int32) { got = append(got, id) }); err != nil {
			t.Fatalf("walkIDs(%q) of %v: %v", enc, ids, err)
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("%v written as %q reads %v", ids, enc, got)
		}
		if _, err := walkIDs(string(enc), len(ids)-1, func(int32) {}); err == nil {
			t.Fatalf("walkIDs(%q) accepted %d IDs over a limit of %d", enc, len(ids), len(ids)-1)
		}
	})
}
