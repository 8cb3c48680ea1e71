package bench_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/bench"
	"github.com/zkalloc/zkalloc/rebalance"
)

var (
	table = flag.Bool("table", false, "run every assignor on every case and print the markdown table")
	out   = flag.String("out", "", "with -table, also write the table to this file (e.g. RESULTS.md)")
	only  = flag.String("case", "", "with -table, run only the case of this name (e.g. 10x100)")
)

// TestTable prints the comparison as a markdown table. It is skipped
// unless -table is given, since it takes a few minutes:
//
//	go test -run TestTable -v -table -out RESULTS.md -timeout 60m
func TestTable(t *testing.T) {
	if !*table {
		t.Skip("run with -table to print the comparison table")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Assignor benchmarks\n\n")
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs, %s/%s), %s; load average %s when it started.\n\n",
		time.Now().UTC().Format("2006-01-02"), cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadAverage())
	fmt.Fprintf(&b, "Reproduce with `cd bench && go test -run TestTable -v -table -out RESULTS.md -timeout 60m`")
	fmt.Fprintf(&b, " (add `-sarama-sticky-huge` for sarama's sticky assignor on 1,000 x 100,000, about a minute per assignment).\n")
	fmt.Fprintf(&b, "Members x partitions over 10 topics; *fresh* is a first assignment, *join* and *leave* follow one member joining or leaving,")
	fmt.Fprintf(&b, " sticky assignors getting their own fresh assignment as the previous one. Time, bytes and allocations are per assignment")
	fmt.Fprintf(&b, " (`testing.Benchmark`); *moved* counts partitions whose owner changed against the assignor's own fresh assignment,")
	fmt.Fprintf(&b, " *min* is `rebalance.MinMoves` (the fewest any assignment with a spread of at most one could move),")
	fmt.Fprintf(&b, " *spread* is the largest minus the smallest share. A cooperative-sticky plan is the first of its two rounds:")
	fmt.Fprintf(&b, " it withholds the partitions that change owner, which are counted as moved, so its spread is that of the first round.\n\n")
	fmt.Fprintf(&b, "| case | event | assignor | time/op | B/op | allocs/op | moved (min) | spread |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range bench.Cases {
		if *only != "" && c.String() != *only {
			continue
		}
		for _, ev := range events {
			for _, a := range bench.Assignors() {
				row := measure(t, a, c, ev)
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c, ev.name, a.Name, row)
				t.Logf("%s %s %s: %s", c, ev.name, a.Name, row)
			}
		}
	}
	if *only == "" {
		shapes(t, &b)
	}
	fmt.Println(b.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()+handWritten(t, *out)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// keepFrom is the heading from which an -out file is written by hand
// (the sticky sections): TestTable rewrites what comes before it and
// keeps the rest.
const keepFrom = "\n## rebalance.Sticky against franz-go's sticky balancer"

// handWritten returns the part of the file at path that TestTable keeps:
// from keepFrom on, or nothing if the file or the heading is missing.
func handWritten(t *testing.T, path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(old), keepFrom); i >= 0 {
		return string(old[i:])
	}
	t.Logf("%s has no %q: nothing kept", path, strings.TrimSpace(keepFrom))
	return ""
}

// shapes adds the table of bench.Shapes: a fresh assignment by Balanced
// and by franz-go's sticky balancer, and the ratio of their times.
func shapes(t *testing.T, b *strings.Builder) {
	var balanced, sticky bench.Assignor
	for _, a := range bench.Assignors() {
		switch a.Name {
		case "zkalloc balanced":
			balanced = a
		case "franz-go sticky":
			sticky = a
		}
	}
	fmt.Fprintf(b, "\n## Other shapes\n\n")
	fmt.Fprintf(b, "A fresh assignment by `rebalance.Balanced` and by franz-go's sticky balancer on other sizes; the partitions are split evenly over the topics.")
	fmt.Fprintf(b, " Each time is the fastest of three benchmarks, taken in turn; a ratio above 1 means Balanced is slower.\n\n")
	fmt.Fprintf(b, "| case | topics | zkalloc balanced | franz-go sticky | ratio |\n")
	fmt.Fprintf(b, "| --- | ---: | ---: | ---: | ---: |\n")
	for _, c := range bench.Shapes {
		// Each assignor's time is the fastest of three benchmarks taken
		// in turn with the other's, since one benchmark of either can
		// vary by half on this machine.
		var runs [2]func() (bench.Result, error)
		for i, a := range []bench.Assignor{balanced, sticky} {
			in, _ := inputs(t, a, c, events[0])
			runs[i] = a.Prepare(in)
		}
		ns := [2]int64{}
		for range 3 {
			for i, run := range runs {
				res := testing.Benchmark(func(b *testing.B) {
					for b.Loop() {
						if _, err := run(); err != nil {
							b.Fatal(err)
						}
					}
				})
				if res.N == 0 {
					t.Fatalf("%s: a benchmark failed", c)
				}
				if ns[i] == 0 || res.NsPerOp() < ns[i] {
					ns[i] = res.NsPerOp()
				}
			}
		}
		row := fmt.Sprintf("%s | %d | %s | %s | %.2f", c, c.Topics, duration(ns[0]), duration(ns[1]), float64(ns[0])/float64(ns[1]))
		fmt.Fprintf(b, "| %s |\n", row)
		t.Logf("shape %s", row)
	}
}

// measure returns the cells after the assignor's name for one row.
func measure(t *testing.T, a bench.Assignor, c bench.Case, ev event) string {
	if why := skip(a, c); why != "" {
		return "skipped: " + why + " | | | |"
	}
	in, before := inputs(t, a, c, ev)
	run := a.Prepare(in)
	var failed error
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := run(); err != nil {
				failed = err
				b.FailNow()
			}
		}
	})
	if failed != nil {
		t.Fatalf("%s %s %s: %v", c, ev.name, a.Name, failed)
	}
	got, err := run()
	if err != nil {
		t.Fatalf("%s %s %s: %v", c, ev.name, a.Name, err)
	}
	next := got()
	moved := "–"
	if before != nil {
		prev := bench.ToPartitions(before)
		// A cooperative plan withholds the partitions that change owner
		// until a second round; they count as moved.
		withheld := c.Partitions - assigned(next)
		moved = fmt.Sprintf("%d (%d)", rebalance.Moved(prev, bench.ToPartitions(next))+withheld, rebalance.MinMoves(prev, in.Members))
	}
	return fmt.Sprintf("%s | %d | %d | %s | %d",
		duration(res.NsPerOp()), res.AllocedBytesPerOp(), res.AllocsPerOp(), moved, bench.Spread(next, in.Members))
}

func assigned(a bench.Assignment) int {
	n := 0
	for _, byTopic := range a {
		for _, ids := range byTopic {
			n += len(ids)
		}
	}
	return n
}

func duration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
}

// loadAverage returns the 1, 5 and 15 minute load averages, which say
// whether other work competed for the CPUs.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel reads the processor's name, or says it is unknown.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
