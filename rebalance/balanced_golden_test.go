package rebalance_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// goldenCase is one input of TestBalancedContract, generated from a fixed
// seed, and the SHA-256 of Balanced's assignment of it.
type goldenCase struct {
	name    string
	members []string
	parts   []rebalance.Partition
	want    string // hex SHA-256 from assignmentSHA256
}

// goldenCases spans the shapes Balanced meets: the benchmark sizes, tiny
// and degenerate groups, more members than partitions, sparse partition
// IDs, many small topics and names with odd bytes. Each is generated from
// its own seed, so adding a case changes no other.
func goldenCases() []goldenCase {
	odd := []string{"", "a", "ü-topic", "orders.v2:eu", "with space", "nul\x00byte", "\xff\xfe", strings.Repeat("long", 64)}
	return []goldenCase{
		{"10x100", goldenMembers(1, 10, ""), goldenParts(1, 100, []string{"events-00", "events-01", "events-02"}, false),
			"6d36054e1c1b9df25a021faad38fd4959af731ea332ce9727df8837cff092a68"},
		{"100x10000", goldenMembers(2, 100, ""), goldenParts(2, 10_000, goldenTopics("events-", 10), false),
			"3d39070e96952527b5c297ca278a99eaa61a135aa5b5b5763e9017c83cd0cac4"},
		{"1000x100000", goldenMembers(3, 1000, ""), goldenParts(3, 100_000, goldenTopics("events-", 10), false),
			"aa7a40b19181ec90dc767912580e9e62e5aec5b118eedde8cd6ba86fec8fe7a0"},
		{"7x3", goldenMembers(4, 7, ""), goldenParts(4, 3, []string{"t"}, false),
			"acb3bde8f90abcf7584c5eb6c053d22d58594dc936c8a57eedf5d91a31758729"},
		{"1x1000", goldenMembers(5, 1, ""), goldenParts(5, 1000, goldenTopics("t", 4), false),
			"535274f1c315fcfbdbd01faaffa2754964fea0a646322de63e1f3054eec38ee8"},
		{"1x1", []string{"only"}, []rebalance.Partition{{Topic: "t", ID: 0}},
			"f259fa466e188d83ce7b77592c91e9b5940f7ee3b7b53a55a9cbd0554b630fd4"},
		{"5x0", goldenMembers(6, 5, ""), nil,
			"959887affd138eed84c040c8833a349e4d3d6fd1598326d92a7050a5fc153d6e"},
		{"50x20", goldenMembers(7, 50, ""), goldenParts(7, 20, []string{"small"}, false),
			"41b99c9cb1e4385f5ec5ff40de491b4fb038ad42eb553d0ce6053e4e34677f9b"},
		{"300x299", goldenMembers(8, 300, "m"), goldenParts(8, 299, goldenTopics("x", 3), false),
			"9369ee4b5d5a80fdf3fa6b766a9ac307a125141013f2416f67520abb60cabebd"},
		{"2000x5000", goldenMembers(9, 2000, "consumer-"), goldenParts(9, 5000, goldenTopics("orders.v", 7), false),
			"788911702f7903f57662dd6d2334c11554246830355302e6ffaefb1f3be97b22"},
		{"sparse-30x3000", goldenMembers(10, 30, ""), goldenParts(10, 3000, goldenTopics("sparse-", 5), true),
			"c4108d228377d0063b6f3f3e80392c3db859bb6ffeaa7a66d0232b70456087b7"},
		{"odd-names-13x997", goldenMembers(11, 13, "ü"), goldenParts(11, 997, odd, true),
			"76ce95f4871c7eeb6b7aa0b9d5a4793e699cdbd7b9d45c216208e59c7312aeda"},
		{"odd-members-9x500", []string{"", "\x00", "a", "a\x00", "b", "ü", "üü", "\xff", strings.Repeat("z", 300)},
			goldenParts(12, 500, odd, false),
			"88f9d8a72750b915ae984472e77067115c89f19662c0d130a0d1a3df12cc6597"},
		{"many-topics-64x6400", goldenMembers(13, 64, "svc-"), goldenParts(13, 6400, goldenTopics("topic-", 400), false),
			"6892cda1ed534dc92b8e1287a313ccac87bc95028884f67ababae5c765374f67"},
		{"3x100000", goldenMembers(14, 3, ""), goldenParts(14, 100_000, goldenTopics("big-", 2), false),
			"057ed32908de46c16beb09d9f012a1ada78206e3d4ba479c5eefbac67dc36bd9"},
		{"1000x1000000", goldenMembers(15, 1000, ""), goldenParts(15, 1_000_000, goldenTopics("events-", 10), false),
			"c098a1aa36422fc7b279989c4be57cce97a58034e8f75044f0e2098d98c56eb1"},
		{"1000x2000", goldenMembers(16, 1000, ""), goldenParts(16, 2000, goldenTopics("few-", 10), false),
			"82cafd532a07603604ce8a2d2096732c1c7424fbeded49912ab722b0692a4b83"},
	}
}

// TestBalancedContract pins Balanced's output bit for bit on inputs of
// every shape: every process of a group must compute the same assignment,
// so any change of a hash below is a change of strategy, never an
// optimisation. The want values were recorded from the implementation of
// commit 36c6575.
func TestBalancedContract(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := rebalance.Balanced.Assign(c.members, c.parts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.members) {
				t.Fatalf("%d members in the result, want %d", len(got), len(c.members))
			}
			if d := assignmentSHA256(c.members, got); d != c.want {
				t.Errorf("SHA-256 %s, want %s", d, c.want)
			}
		})
	}
}

// assignmentSHA256 hashes an assignment in a form with no ambiguity: for
// each member in the order of members, its length-prefixed name and its
// partition count, then each of its partitions in the order given as a
// length-prefixed topic and a big-endian ID.
func assignmentSHA256(members []string, got map[string][]rebalance.Partition) string {
	h := sha256.New()
	var buf [8]byte
	putInt := func(n uint64) {
		binary.BigEndian.PutUint64(buf[:], n)
		h.Write(buf[:])
	}
	for _, m := range members {
		putInt(uint64(len(m)))
		h.Write([]byte(m))
		ps := got[m]
		putInt(uint64(len(ps)))
		for _, p := range ps {
			putInt(uint64(len(p.Topic)))
			h.Write([]byte(p.Topic))
			putInt(uint64(uint32(p.ID)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// goldenMembers returns n distinct sorted member names with the given
// prefix from seed.
func goldenMembers(seed uint64, n int, prefix string) []string {
	r := rand.New(rand.NewPCG(seed, 0x6d656d62))
	seen := make(map[string]bool, n)
	members := make([]string, 0, n)
	for len(members) < n {
		m := fmt.Sprintf("%s%016x", prefix, r.Uint64())
		if !seen[m] {
			seen[m] = true
			members = append(members, m)
		}
	}
	slices.Sort(members)
	return members
}

// goldenTopics returns n topic names prefix0 to prefix(n-1).
func goldenTopics(prefix string, n int) []string {
	ts := make([]string, n)
	for i := range ts {
		ts[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return ts
}

// goldenParts returns p distinct sorted partitions spread over topics from
// seed: with dense IDs, each topic gets IDs 0, 1, ... in turn; with
// sparse ones, random non-negative IDs.
func goldenParts(seed uint64, p int, topics []string, sparse bool) []rebalance.Partition {
	r := rand.New(rand.NewPCG(seed, 0x70617274))
	seen := make(map[rebalance.Partition]bool, p)
	next := make([]int32, len(topics))
	parts := make([]rebalance.Partition, 0, p)
	for len(parts) < p {
		t := r.IntN(len(topics))
		id := next[t]
		if sparse {
			id = r.Int32()
		} else {
			next[t]++
		}
		pt := rebalance.Partition{Topic: topics[t], ID: id}
		if !seen[pt] {
			seen[pt] = true
			parts = append(parts, pt)
		}
	}
	rebalance.Sort(parts)
	return parts
}
