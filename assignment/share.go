package assignment

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Share is what one member's share node holds: the partitions it owns,
// sorted by [rebalance.Compare], and the home of each ("" for none).
type Share struct {
	Owned []rebalance.Partition
	Home  []string // parallel to Owned; nil when no partition has a home
}

// appendShare writes a share node's data: one line per topic the member
// owns, "o <topic> <ids>", in topic order, then one line per topic and
// home, "h <topic> <ids> <home>", in topic then home order, the IDs in
// the form of appendIDs. The home comes last because a member name may
// hold spaces. The share is parts[own[0]], parts[own[1]], ..., sorted;
// home[k] is the index in names of parts[k]'s home, or
// [rebalance.Nobody]; home may be nil. Taking indices rather than
// partitions lets Encode group a whole record by member with an int32
// per partition, which the garbage collector does not scan.
func appendShare(b []byte, parts []rebalance.Partition, own []int32, home []int32, names []string) []byte {
	var ids []int32
	for i := 0; i < len(own); {
		topic := parts[own[i]].Topic
		ids = ids[:0]
		j := i
		for ; j < len(own) && parts[own[j]].Topic == topic; j++ {
			ids = append(ids, parts[own[j]].ID)
		}
		b = append(b, "o "...)
		b = append(b, topic...)
		b = append(b, ' ')
		b = appendIDs(b, ids)
		b = append(b, '\n')
		i = j
	}
	if home == nil {
		return b
	}
	type homed struct {
		p    rebalance.Partition
		home string
	}
	var hs []homed
	for _, k := range own {
		if h := home[k]; h != rebalance.Nobody {
			hs = append(hs, homed{parts[k], names[h]})
		}
	}
	slices.SortStableFunc(hs, func(a, b homed) int {
		if c := strings.Compare(a.p.Topic, b.p.Topic); c != 0 {
			return c
		}
		return strings.Compare(a.home, b.home)
	})
	for i := 0; i < len(hs); {
		j := i
		ids = ids[:0]
		for j < len(hs) && hs[j].p.Topic == hs[i].p.Topic && hs[j].home == hs[i].home {
			ids = append(ids, hs[j].p.ID)
			j++
		}
		b = append(b, "h "...)
		b = append(b, hs[i].p.Topic...)
		b = append(b, ' ')
		b = appendIDs(b, ids)
		b = append(b, ' ')
		b = append(b, hs[i].home...)
		b = append(b, '\n')
		i = j
	}
	return b
}

// Sum is the content hash the head keeps for each share node: the first
// 8 bytes of the data's SHA-256. A reader compares it with what it read,
// and a writer keeps a member's node when its new share hashes the same.
func Sum(data []byte) uint64 {
	h := sha256.Sum256(data)
	return binary.BigEndian.Uint64(h[:8])
}

// DecodeShare reads the data of e's share node and checks it against e:
// its hash must be e.Sum and it must hold e.Count partitions, well
// formed: topics valid and in order, IDs ascending, every home a valid
// name other than e's and given to partitions the share owns, at most
// once each. Anything else is an error wrapping [ErrInvalid]; one whose
// hash differs also wraps [ErrStale], since it is most likely a node
// read from another record than the head (which cannot happen with
// nodes written as [Encode] names them, but costs one comparison).
func DecodeShare(e Entry, data []byte) (Share, error) {
	if e.Node == "" {
		if len(data) > 0 || e.Count != 0 {
			return Share{}, fmt.Errorf("%w share of %q: %d partitions or data without a node", ErrInvalid, e.Name, e.Count)
		}
		return Share{}, nil
	}
	if got := Sum(data); got != e.Sum {
		return Share{}, fmt.Errorf("%w: %w share of %q: node %s hashes to %016x, the head says %016x", ErrInvalid, ErrStale, e.Name, e.Node, got, e.Sum)
	}
	sh, err := parseShare(string(data), e.Name, e.Count)
	if err != nil {
		return Share{}, fmt.Errorf("share of %q, node %s: %w", e.Name, e.Node, err)
	}
	return sh, nil
}

// parseShare reads what appendShare writes, for the member owner, which
// must own exactly count partitions.
func parseShare(s, owner string, count int) (Share, error) {
	if count < 0 || count > MaxPartitions {
		return Share{}, fmt.Errorf("%w: count %d out of range", ErrInvalid, count)
	}
	var sh Share
	sh.Owned = make([]rebalance.Partition, 0, count)
	lastTopic := ""
	homes := false
	var lastHome [2]string // the topic and home of the last home line
	if s == "" {
		if count != 0 {
			return Share{}, fmt.Errorf("%w: no partitions, the head says %d", ErrInvalid, count)
		}
		return sh, nil
	}
	if !strings.HasSuffix(s, "\n") {
		return Share{}, fmt.Errorf("%w: the last line is not ended", ErrInvalid)
	}
	for line := range strings.SplitSeq(s[:len(s)-1], "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		topic, rest, _ := strings.Cut(rest, " ")
		if err := rebalance.ValidateTopic(topic); err != nil {
			return Share{}, err
		}
		switch kind {
		case "o":
			if homes || topic <= lastTopic && lastTopic != "" {
				return Share{}, fmt.Errorf("%w: topic %q out of order", ErrInvalid, topic)
			}
			lastTopic = topic
			if _, err := walkIDs(rest, count-len(sh.Owned), func(id int32) {
				sh.Owned = append(sh.Owned, rebalance.Partition{Topic: topic, ID: id})
			}); err != nil {
				return Share{}, fmt.Errorf("topic %q: %w", topic, err)
			}
		case "h":
			ids, home, ok := strings.Cut(rest, " ")
			if !ok {
				return Share{}, fmt.Errorf("%w: home line of %q without a home", ErrInvalid, topic)
			}
			if err := validMember(home); err != nil {
				return Share{}, fmt.Errorf("home: %w", err)
			}
			if home == owner {
				return Share{}, fmt.Errorf("%w: home %q is the owner", ErrInvalid, home)
			}
			key := [2]string{topic, home}
			if homes && (key[0] < lastHome[0] || key[0] == lastHome[0] && key[1] <= lastHome[1]) {
				return Share{}, fmt.Errorf("%w: home line %q of %q out of order", ErrInvalid, home, topic)
			}
			homes, lastHome = true, key
			if sh.Home == nil {
				sh.Home = make([]string, len(sh.Owned))
			}
			// The topic's owned partitions, to find each ID in.
			lo, _ := slices.BinarySearchFunc(sh.Owned, topic, func(p rebalance.Partition, t string) int { return strings.Compare(p.Topic, t) })
			var err error
			if _, werr := walkIDs(ids, len(sh.Owned), func(id int32) {
				i, found := slices.BinarySearchFunc(sh.Owned[lo:], rebalance.Partition{Topic: topic, ID: id}, rebalance.Compare)
				switch {
				case err != nil:
				case !found:
					err = fmt.Errorf("%w: home of %s, which the share does not own", ErrInvalid, rebalance.Partition{Topic: topic, ID: id})
				case sh.Home[lo+i] != "":
					err = fmt.Errorf("%w: two homes for %s", ErrInvalid, rebalance.Partition{Topic: topic, ID: id})
				default:
					sh.Home[lo+i] = home
				}
			}); werr != nil {
				return Share{}, fmt.Errorf("homes of %q: %w", topic, werr)
			} else if err != nil {
				return Share{}, err
			}
		default:
			return Share{}, fmt.Errorf("%w: line %.40q", ErrInvalid, line)
		}
	}
	if len(sh.Owned) != count {
		return Share{}, fmt.Errorf("%w: %d partitions, the head says %d", ErrInvalid, len(sh.Owned), count)
	}
	return sh, nil
}
