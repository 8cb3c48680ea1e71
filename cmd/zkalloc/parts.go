package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/partset"
	"github.com/zkalloc/zkalloc/partitions"
)

// parseTopicIDs reads "topic:ids" arguments, ids as compact ranges
// ("events:0-63,70"). The topic is what comes before the last colon.
func parseTopicIDs(args []string) (map[string][]int32, error) {
	if len(args) == 0 {
		return nil, usagef("want topic:ids arguments, e.g. events:0-63 audit:0,5")
	}
	out := map[string][]int32{}
	for _, a := range args {
		i := strings.LastIndexByte(a, ':')
		if i <= 0 {
			return nil, usagef("%q: want topic:ids, e.g. events:0-63,70", a)
		}
		topic, spec := a[:i], a[i+1:]
		var ids []int32
		for _, piece := range strings.Split(spec, ",") {
			got, err := partitions.DecodeIDs([]byte(piece))
			if err != nil || len(got) == 0 {
				return nil, usagef("%q: bad ids %q: want ranges such as 0-63,70", a, piece)
			}
			ids = append(ids, got...)
		}
		out[topic] = append(out[topic], ids...)
	}
	if _, err := partitions.Normalize(out); err != nil {
		return nil, usagef("%v", err)
	}
	return out, nil
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
		return json.NewEncoder(w).Encode(out)
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
// merge. Adding to a group that has no node yet creates it, so a set can
// be seeded before the first member starts; removing needs the group.
func changePartitions(c *client, remove bool, change map[string][]int32, o options, w io.Writer) error {
	if remove {
		if err := c.checkGroup(); err != nil {
			return err
		}
	}
	if err := partset.Change(c.conn, c.paths, remove, change); err != nil {
		return err
	}
	return listPartitions(c, o, w)
}
