package bench_test

import (
	"flag"
	"fmt"
	"testing"

	"github.com/zkalloc/zkalloc/bench"
)

var saramaStickyHuge = flag.Bool("sarama-sticky-huge", false,
	"also run sarama's sticky assignor on 1,000 x 100,000, which takes about a minute per assignment")

// An event is what happened to the group before the assignment: nothing
// (a fresh assignment), one member joined, or one left. Sticky assignors
// get the assignment they made for the group before the event.
type event struct {
	name string
	pick func(members, joined, left []string) []string
}

var events = []event{
	{"fresh", func(m, _, _ []string) []string { return m }},
	{"join", func(_, j, _ []string) []string { return j }},
	{"leave", func(_, _, l []string) []string { return l }},
}

// skip reports why a combination is left out of a run, or "".
func skip(a bench.Assignor, c bench.Case) string {
	if a.Name == "sarama sticky" && c.Members >= 1000 && !*saramaStickyHuge {
		return "sarama sticky takes about a minute here; run with -sarama-sticky-huge"
	}
	return ""
}

// inputs returns the input of assignor a for c after ev and, unless ev
// is fresh, the assignment a made before it (computed once: some
// assignors do not give the same fresh assignment twice). Sticky
// assignors get that assignment as the previous one.
func inputs(tb testing.TB, a bench.Assignor, c bench.Case, ev event) (in bench.Input, prev bench.Assignment) {
	members, joined, left, topics := bench.Groups(c)
	in = bench.Input{Members: ev.pick(members, joined, left), Topics: topics}
	if ev.name == "fresh" {
		return in, nil
	}
	res, err := a.Prepare(bench.Input{Members: members, Topics: topics})()
	if err != nil {
		tb.Fatalf("%s fresh %s: %v", a.Name, c, err)
	}
	prev = res()
	if a.Sticky {
		in.Prev = prev
	}
	return in, prev
}

func BenchmarkAssign(b *testing.B) {
	for _, c := range bench.Cases {
		for _, ev := range events {
			for _, a := range bench.Assignors() {
				b.Run(fmt.Sprintf("%s/%s/%s", c, ev.name, a.Name), func(b *testing.B) {
					if why := skip(a, c); why != "" {
						b.Skip(why)
					}
					in, _ := inputs(b, a, c, ev)
					run := a.Prepare(in)
					b.ReportAllocs()
					for b.Loop() {
						if _, err := run(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
