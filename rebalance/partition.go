package rebalance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
// everything before the last colon and must pass [ValidateTopic] (so it
// holds no colon); the ID
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

// TopicChars describes the characters a topic name may hold, as
// [ValidateTopic]'s errors quote it: Kafka's, a-z A-Z 0-9 . _ -.
const TopicChars = "a-z A-Z 0-9 . _ -"

// ValidateTopic checks that name can be a topic: 1 to [MaxNameLen]
// bytes of Kafka's topic characters, the ASCII letters and digits, '.',
// '_' and '-' ([TopicChars]), and not "." or "..". Nothing else is
// allowed, so that a topic name holds no separator (':' in
// [Partition.String] and the claim nodes, ',' and ';' in lists), no
// whitespace and nothing that prints like something else. The error
// names the first character refused and its byte offset, e.g.
//
//	topic "events:1;audit": character ':' at byte 6 is not allowed; topic names use a-z A-Z 0-9 . _ -
func ValidateTopic(name string) error {
	switch name {
	case "":
		return fmt.Errorf("%w topic: empty name", ErrInvalid)
	case ".", "..":
		return fmt.Errorf("%w topic %q: reserved name", ErrInvalid, name)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w topic %q: %d bytes, longer than %d", ErrInvalid, name, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if topicChar(name[i]) {
			continue
		}
		what := fmt.Sprintf("byte %#x", name[i]) // not UTF-8
		if r, size := utf8.DecodeRuneInString(name[i:]); r != utf8.RuneError || size > 1 {
			what = fmt.Sprintf("character %q", r)
		}
		return fmt.Errorf("%w topic %q: %s at byte %d is not allowed; topic names use %s", ErrInvalid, name, what, i, TopicChars)
	}
	return nil
}

func topicChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
