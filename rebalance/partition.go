package rebalance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error about a malformed name, topic,
// partition ID or partition string, and about a topic's data or a
// partition set that package partitions refuses.
var ErrInvalid = errors.New("rebalance: invalid")

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
	id, err := ParseID(digits)
	if err != nil {
		return Partition{}, fmt.Errorf("partition %q: %w", s, err)
	}
	return Partition{Topic: topic, ID: id}, nil
}

// ParseID reads a partition ID as [Partition.String] writes it: a
// non-negative decimal int32 with no sign and no leading zeros.
func ParseID(s string) (int32, error) {
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

// ValidateTopic checks that name can be a topic: a name that
// [ValidateName] accepts (valid UTF-8, without '/', without control or
// other invisible characters, not "." or "..") of 1 to [MaxNameLen]
// bytes.
func ValidateTopic(name string) error {
	if err := ValidateName(name); err != nil {
		return fmt.Errorf("topic: %w", err)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w topic %q: longer than %d bytes", ErrInvalid, name, MaxNameLen)
	}
	return nil
}
