package bench_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/bench"
	"github.com/zkalloc/zkalloc/rebalance"
)

var (
	stickyTable  = flag.Bool("sticky", false, "run TestStickyTable: rebalance.Sticky against franz-go's sticky balancer")
	stickyRounds = flag.Int("sticky-rounds", 5, "with -sticky, benchmarks of each assignor per row, taken in turn; the fastest counts")
)

// StickyCases are the sizes issue 27 sets a bound at: rebalance.Sticky
// at most 1.2x franz-go's sticky balancer's time at 100 x 10,000, at
// most 1.0x at 1,000 x 100,000.
var stickyCases = []bench.Case{{Members: 100, Partitions: 10_000, Topics: 10}, {Members: 1_000, Partitions: 100_000, Topics: 10}}

// stickyEvents adds to events a steady state: the same members again,
// with their previous assignment.
var stickyEvents = append([]event{{"steady", func(m, _, _ []string) []string { return m }}}, events[1:]...)

// stickyPair returns zkalloc's and franz-go's sticky assignors.
func stickyPair(tb testing.TB) [2]bench.Assignor {
	var pair [2]bench.Assignor
	for _, a := range bench.Assignors() {
		switch a.Name {
		case "zkalloc sticky":
			pair[0] = a
		case "franz-go sticky":
			pair[1] = a
		}
	}
	if pair[0].Prepare == nil || pair[1].Prepare == nil {
		tb.Fatal("sticky assignors missing from bench.Assignors")
	}
	return pair
}

// stickyInputs is inputs with the steady event: the members unchanged,
// with the assignor's own fresh assignment as the previous one.
func stickyInputs(tb testing.TB, a bench.Assignor, c bench.Case, ev event) (bench.Input, bench.Assignment) {
	if ev.name != "steady" {
		return inputs(tb, a, c, ev)
	}
	in, prev := inputs(tb, a, c, events[1]) // computes the fresh assignment
	members, _, _, _ := bench.Groups(c)
	in.Members = members
	return in, prev
}

func BenchmarkSticky(b *testing.B) {
	for _, c := range stickyCases {
		for _, ev := range stickyEvents {
			for _, a := range stickyPair(b) {
				b.Run(fmt.Sprintf("%s/%s/%s", c, ev.name, a.Name), func(b *testing.B) {
					in, _ := stickyInputs(b, a, c, ev)
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

// TestStickyTable prints the markdown table of bench/RESULTS.md's section
// on rebalance.Sticky. It is skipped unless -sticky is given:
//
//	go test -run TestStickyTable -v -sticky -timeout 30m
func TestStickyTable(t *testing.T) {
	if !*stickyTable {
		t.Skip("run with -sticky to compare rebalance.Sticky with franz-go's sticky balancer")
	}
	pair := stickyPair(t)
	var b strings.Builder
	fmt.Fprintf(&b, "| case | event | zkalloc sticky | franz-go sticky | ratio | bound | moved zkalloc / franz-go (min) |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range stickyCases {
		bound := 1.2
		if c.Partitions >= 100_000 {
			bound = 1.0
		}
		for _, ev := range stickyEvents {
			var runs [2]func() (bench.Result, error)
			var moved [2]string
			for i, a := range pair {
				in, before := stickyInputs(t, a, c, ev)
				runs[i] = a.Prepare(in)
				got, err := runs[i]()
				if err != nil {
					t.Fatalf("%s %s %s: %v", c, ev.name, a.Name, err)
				}
				prev := bench.ToPartitions(before)
				moved[i] = fmt.Sprintf("%d", rebalance.Moved(prev, bench.ToPartitions(got())))
				if i == 1 {
					moved[i] += fmt.Sprintf(" (%d)", rebalance.MinMoves(prev, in.Members))
				}
			}
			ns := [2]int64{}
			for range *stickyRounds {
				for i, run := range runs {
					res := testing.Benchmark(func(b *testing.B) {
						for b.Loop() {
							if _, err := run(); err != nil {
								b.Fatal(err)
							}
						}
					})
					if res.N == 0 {
						t.Fatalf("%s %s: a benchmark failed", c, ev.name)
					}
					if ns[i] == 0 || res.NsPerOp() < ns[i] {
						ns[i] = res.NsPerOp()
					}
				}
			}
			ratio := float64(ns[0]) / float64(ns[1])
			row := fmt.Sprintf("| %s | %s | %s | %s | %.2f | %.1f | %s / %s |", c, ev.name, duration(ns[0]), duration(ns[1]), ratio, bound, moved[0], moved[1])
			fmt.Fprintln(&b, row)
			t.Log(row)
		}
	}
	fmt.Println(b.String())
}
