package partitions

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/zkalloc/zkalloc/internal/zkpath"
)

// ErrInvalid is wrapped by every error about a malformed topic name,
// partition ID, partition string or topic data.
var ErrInvalid = errors.New("partitions: invalid")

// MaxTopicLen is the longest topic name accepted, in bytes; Kafka's limit,
// which bounds group and member names too.
const MaxTopicLen = zkpath.MaxNameLen

// MaxTopicsBytes bounds the names of a set's topics: their lengths plus 4
// bytes each (how ZooKeeper sends a name) add up to at most this. Every
// member reads the list of topics in one reply, and a client refuses a
// reply bigger than its buffer (1 MiB here and for ZooKeeper's own
// clients): past it, no member could read the set. Half of that leaves
// room for two members that add topics at the same moment, each checking
// against what it has read. It allows about 1,970 topics of the longest
// names, or 25,000 of 16 bytes.
const MaxTopicsBytes = 500_000

// MaxPartitions bounds the partitions of a set, all topics together: 2^20
// (1,048,576), as many as one topic may hold ([MaxTopicIDs]). The scale
// tests run a group of 1,001,000 partitions; a view of this many takes
// about 25 MB, and each member keeps a few. Without it, topics written by
// another client (2,000 topics of a million IDs, a few bytes each) would
// make every member allocate gigabytes. An addition that would take the
// set past it is refused; a set read past it (members adding at the same
// moment, or a foreign writer) is cut in name order: each topic is taken
// if its partitions fit in what the topics before it left, and the others
// are reported in [View.Corrupt] with an error naming the limit, their IDs
// never decoded.
const MaxPartitions = 1 << 20

// topicsBytes is what [MaxTopicsBytes] bounds for the given names.
func topicsBytes(names iter.Seq[string]) int {
	n := 0
	for name := range names {
		n += listedBytes(name)
	}
	return n
}

// listedBytes is what one name takes in ZooKeeper's list of children.
func listedBytes(name string) int { return len(name) + 4 }

// Partition names one partition of one topic. The zero value is not a valid
// partition. Partitions are ordered by topic, then numerically by ID (see
// [Compare]), so "t:2" comes before "t:10".
type Partition struct {
	Topic string
	ID    int32
}

// String returns "topic:id".
func (p Partition) String() string {
	return p.Topic + ":" + strconv.FormatInt(int64(p.ID), 10)
}

// Compare orders partitions by topic, then numerically by ID. It returns
// -1, 0 or +1.
func Compare(a, b Partition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Sort sorts ps in [Compare] order.
func Sort(ps []Partition) { slices.SortFunc(ps, Compare) }

// Parse reads "topic:id" as written by [Partition.String]. The topic is
// everything before the last colon and must pass [ValidateTopic]; the ID
// is a non-negative decimal int32 without sign or leading zeros.
func Parse(s string) (Partition, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Partition{}, fmt.Errorf("%w partition %q: want topic:id", ErrInvalid, s)
	}
	topic, digits := s[:i], s[i+1:]
	if err := ValidateTopic(topic); err != nil {
		return Partition{}, fmt.Errorf("partition %q: %w", s, err)
	}
	id, err := parseID(digits)
	if err != nil {
		return Partition{}, fmt.Errorf("partition %q: %w", s, err)
	}
	return Partition{Topic: topic, ID: id}, nil
}

// parseID reads a non-negative decimal int32 with no sign and no leading
// zeros.
func parseID(s string) (int32, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%w partition id %q", ErrInvalid, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w partition id %q", ErrInvalid, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w partition id %q: out of range", ErrInvalid, s)
	}
	return int32(n), nil
}

// ValidateTopic checks that name can be a topic: a ZooKeeper node name
// (see zkpath.ValidateName: valid UTF-8, without '/', without control or
// other invisible characters, not "." or "..") of 1 to [MaxTopicLen]
// bytes.
func ValidateTopic(name string) error {
	if err := zkpath.ValidateName(name); err != nil {
		return fmt.Errorf("%w topic: %w", ErrInvalid, err)
	}
	if len(name) > MaxTopicLen {
		return fmt.Errorf("%w topic %q: longer than %d bytes", ErrInvalid, name, MaxTopicLen)
	}
	return nil
}
