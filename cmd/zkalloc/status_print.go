package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// printStatus prints st for people: a summary line, the record's line,
// then tables of members, topics, owners, hand-offs and hold records.
func printStatus(st *groupStatus, w io.Writer) error {
	total := 0
	for _, ids := range st.Partitions {
		n, _ := partitions.DecodeIDs([]byte(ids))
		total += len(n)
	}
	handoffs := fmt.Sprint(len(st.Handoffs))
	if !st.HandoffsKnown {
		handoffs = "unknown"
	}
	held := ""
	if len(st.RecordOnly) > 0 {
		held = fmt.Sprintf(", held by record only: %d", len(st.RecordOnly))
	}
	fmt.Fprintf(w, "group %s (%s): %d members, %d topics, %d partitions, %d owned, %d unowned, hand-offs in progress: %s%s\n",
		st.Group, st.Path, len(st.Members), len(st.Partitions), total, len(st.Owners), len(st.Unowned), handoffs, held)

	if r := st.Record; r != nil && r.Error != "" {
		fmt.Fprintf(w, "assignment record: unreadable: %s\n", r.Error)
	} else if r != nil {
		fmt.Fprintf(w, "assignment record: generation %d, computed for members zxid %s, partitions zxid %s\n", r.Generation, r.MembersZxid, r.PartitionsZxid)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	inRecord := ""
	if st.Record != nil && st.Record.Error == "" {
		inRecord = "\tIN RECORD"
	}
	fmt.Fprintf(tw, "\nMEMBER\tHOST\tPID\tSESSION\tSTRATEGY\tVERSION\tAGE\tWEIGHT\tDRAINED\tOWNS%s\n", inRecord)
	for _, m := range st.Members {
		drained := "-"
		if m.Drained {
			drained = "drained"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%d", m.Name, m.Host, m.PID, m.Session, m.Strategy, m.Version, m.Age, m.Weight, drained, m.Owns)
		switch {
		case inRecord == "":
		case m.InRecord == nil:
			fmt.Fprint(tw, "\t-")
		default:
			fmt.Fprintf(tw, "\t%d", *m.InRecord)
		}
		fmt.Fprintln(tw)
	}
	for _, d := range st.DrainedAbsent {
		fmt.Fprintf(tw, "(drained, not live: %s%s)\n", d.Name, d.since())
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITIONS")
	for _, topic := range slices.Sorted(maps.Keys(st.Partitions)) {
		fmt.Fprintf(tw, "%s\t%s\n", topic, st.Partitions[topic])
	}
	for _, c := range st.Corrupt {
		fmt.Fprintf(tw, "corrupt\t%s\n", c)
	}
	// Owners, grouped: one line per member with its partitions compacted.
	byOwner := map[string][]rebalance.Partition{}
	for name, m := range st.Owners {
		if p, err := rebalance.Parse(name); err == nil {
			byOwner[m] = append(byOwner[m], p)
		}
	}
	fmt.Fprintln(tw, "\nOWNER\tPARTITIONS")
	for _, m := range slices.Sorted(maps.Keys(byOwner)) {
		fmt.Fprintf(tw, "%s\t%s\n", m, compact(byOwner[m]))
	}
	if len(st.Unowned) > 0 {
		fmt.Fprintf(tw, "(unowned)\t%s\n", compact(parseAll(st.Unowned)))
	}
	if len(st.Strays) > 0 {
		fmt.Fprintf(tw, "(claimed, not in the set)\t%s\n", strings.Join(st.Strays, " "))
	}
	for _, seat := range st.Seats {
		fmt.Fprintf(tw, "(seat kept for %s, left)\t\n", seat)
	}
	if len(st.Paused) > 0 {
		fmt.Fprintf(tw, "(paused for the seats)\t%s\n", compact(parseAll(st.Paused)))
	}
	if len(st.Handoffs) > 0 {
		fmt.Fprintln(tw, "\nHAND-OFF\tFROM\tTO\tAGE")
		for _, h := range st.Handoffs {
			from := h.from("-")
			age := h.Age
			if age == "" {
				age = "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Partition, from, h.To, age)
		}
		fmt.Fprintln(tw, "(age: how long since the group's members or set last changed; ? if ZooKeeper does not date it)")
	}
	if !st.HandoffsKnown {
		fmt.Fprintf(tw, "\n(hand-offs unknown: %s)\n", st.HandoffsUnknown)
	}
	if len(st.RecordOnly)+len(st.EndedHolds)+len(st.BadHolds) > 0 {
		fmt.Fprintln(tw, "\nHOLD RECORD\tMEMBER\tSESSION\tSTATE")
		for _, h := range st.RecordOnly {
			fmt.Fprintf(tw, "%s\t%s\t%s\theld by record only: claim deleted from outside, or the holder is releasing\n", h.Partition, h.Member, h.Session)
		}
		for _, h := range st.EndedHolds {
			fmt.Fprintf(tw, "%s\t%s\t%s\tleft by an ended session; the next owner replaces it\n", h.Partition, h.Member, h.Session)
		}
		for _, h := range st.BadHolds {
			fmt.Fprintf(tw, "%s\t-\t-\tunreadable: %q (not a member's record)\n", h.Partition, h.Data)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Handoffs) > 0 || len(st.RecordOnly) > 0 {
		_, err := fmt.Fprintf(w, "\n%s\n", deleteAdvice)
		return err
	}
	return nil
}

func parseAll(names []string) []rebalance.Partition {
	var ps []rebalance.Partition
	for _, n := range names {
		if p, err := rebalance.Parse(n); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// compact renders partitions as "events:0-3,7 audit:1".
func compact(ps []rebalance.Partition) string {
	if len(ps) == 0 {
		return "-"
	}
	rebalance.Sort(ps)
	byTopic := map[string][]int32{}
	var topics []string
	for _, p := range ps {
		if _, ok := byTopic[p.Topic]; !ok {
			topics = append(topics, p.Topic)
		}
		byTopic[p.Topic] = append(byTopic[p.Topic], p.ID)
	}
	out := make([]string, len(topics))
	for i, t := range topics {
		out[i] = t + ":" + string(partitions.EncodeIDs(byTopic[t]))
	}
	return strings.Join(out, " ")
}
