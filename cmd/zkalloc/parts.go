package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// parseTopicIDs reads "topic:ids" arguments, ids as ranges and single
// IDs ("events:0-63,70"). The topic is what comes before the last colon;
// a colon in it is refused by the rule on topic names. The errors say
// what is wrong with the argument.
func parseTopicIDs(args []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, a := range args {
		i := strings.LastIndexByte(a, ':')
		if i <= 0 {
			return nil, usagef("%q: want topic:ids, e.g. events:0-63,70", a)
		}
		topic, spec := a[:i], a[i+1:]
		if err := rebalance.ValidateTopic(topic); err != nil {
			hint := ""
			if strings.ContainsAny(topic, ":;, ") {
				hint = " (give one topic:ids per argument: events:0-3 audit:0)"
			}
			return nil, usagef("%q: %s%s", a, strings.TrimPrefix(err.Error(), rebalance.ErrInvalid.Error()+" "), hint)
		}
		count := len(out[topic])
		for piece := range strings.SplitSeq(spec, ",") {
			lo, hi, err := parseRange(piece)
			if err != nil {
				return nil, usagef("%q: %s", a, err)
			}
			if count += int(hi-lo) + 1; count > partitions.MaxTopicIDs {
				return nil, usagef("%q: more than %d IDs (2^20) for topic %s, the most a topic may hold", a, partitions.MaxTopicIDs, topic)
			}
			for id := int64(lo); id <= int64(hi); id++ {
				out[topic] = append(out[topic], int32(id))
			}
		}
	}
	if _, err := partitions.Normalize(out); err != nil {
		return nil, usagef("%s", strings.TrimPrefix(err.Error(), rebalance.ErrInvalid.Error()+": "))
	}
	return out, nil
}

// parseRange reads one piece of an ID list, "5" or "0-63", and says what
// is wrong with a bad one.
func parseRange(piece string) (lo, hi int32, err error) {
	if piece == "" {
		return 0, 0, errors.New("an empty ID in the list")
	}
	if piece[0] == '-' || piece[0] == '+' {
		return 0, 0, fmt.Errorf("%q: IDs are not negative and carry no sign", piece)
	}
	a, b, isRange := strings.Cut(piece, "-")
	if lo, err = parseID(a); err == nil && isRange {
		hi, err = parseID(b)
	} else {
		hi = lo
	}
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("%q: %w", piece, err)
	case hi < lo:
		return 0, 0, fmt.Errorf("%q: a descending range; write %d-%d", piece, hi, lo)
	}
	return lo, hi, nil
}

func parseID(s string) (int32, error) {
	if s == "" {
		return 0, errors.New("an ID is missing")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not an ID (a decimal number from 0 to 2147483647)", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("ID %s is out of range: at most 2147483647", s)
	}
	return int32(n), nil
}

func listPartitions(c *client, o options, w io.Writer) error {
	if err := c.checkGroup(); err != nil {
		return err
	}
	set, corrupt, err := partset.Read(c.conn, c.paths)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	out := map[string]string{}
	for topic, ids := range set {
		out[topic] = string(partitions.EncodeIDs(ids))
	}
	if o.json {
		return encodeJSON(w, out, false)
	}
	for _, topic := range slices.Sorted(maps.Keys(out)) {
		fmt.Fprintf(w, "%s:%s\n", topic, out[topic])
	}
	for _, e := range corrupt {
		fmt.Fprintf(w, "# corrupt: %v\n", e)
	}
	return nil
}

// changePartitions adds or removes partitions with the library's own
// merge. Adding to a group that has no node creates it only with -create,
// so that a misspelt -group creates nothing; removing needs the group.
// Removing names on stderr the partitions that were not in the set.
func changePartitions(c *client, remove bool, change map[string][]int32, o options, w, stderr io.Writer) error {
	if !remove && o.create {
		return changeAndList(c, remove, change, o, w)
	}
	if err := c.checkGroup(); err != nil {
		if errors.Is(err, errNoGroup) && !remove {
			return fmt.Errorf("%w; -create creates it", err)
		}
		return err
	}
	if !remove {
		return changeAndList(c, remove, change, o, w)
	}
	set, _, err := partset.Read(c.conn, c.paths)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	var absent []rebalance.Partition
	for topic, ids := range change {
		for _, id := range ids {
			if _, ok := slices.BinarySearch(set[topic], id); !ok {
				absent = append(absent, rebalance.Partition{Topic: topic, ID: id})
			}
		}
	}
	if err := changeAndList(c, remove, change, o, w); err != nil {
		return err
	}
	if len(absent) > 0 {
		fmt.Fprintf(stderr, "zkalloc: not in the set, so not removed: %s\n", compact(absent))
	}
	return nil
}

func changeAndList(c *client, remove bool, change map[string][]int32, o options, w io.Writer) error {
	if err := partset.Change(c.conn, c.paths, remove, change); err != nil {
		return err
	}
	return listPartitions(c, o, w)
}
