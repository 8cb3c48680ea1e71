package prometheus_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkalloc/zkalloc"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
)

// A member's metrics on /metrics. Config.Metrics is not needed: each
// scrape reads alloc.Stats().
func Example() {
	alloc, err := zkalloc.New(zkalloc.Config{
		Servers: []string{"zk1:2181", "zk2:2181"}, Group: "billing", Member: "m1",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := alloc.Close(); err != nil {
			log.Print(err)
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(zkprom.NewCollector(alloc, prometheus.Labels{"group": "billing", "member": "m1"}))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() { log.Fatal(http.ListenAndServe(":9100", nil)) }()

	if err := alloc.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	for u := range alloc.Updates() {
		// ... consume u.Assigned, then:
		u.Ack()
	}
}

// What a scrape reports, here before Start: the session is "idle" and
// nothing is assigned yet.
func ExampleNewCollector() {
	alloc, err := zkalloc.New(zkalloc.Config{Servers: []string{"zk1:2181"}, Group: "billing", Member: "m1"})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := alloc.Close(); err != nil {
			log.Print(err)
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(zkprom.NewCollector(alloc, prometheus.Labels{"group": "billing", "member": "m1"}))
	fams, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "zkalloc_assigned_partitions", "zkalloc_session_state":
			for _, m := range f.GetMetric() {
				state := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "state" {
						state = "{state=" + l.GetValue() + "}"
					}
				}
				fmt.Printf("%s%s %v\n", f.GetName(), state, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// zkalloc_assigned_partitions 0
	// zkalloc_session_state{state=closed} 0
	// zkalloc_session_state{state=connecting} 0
	// zkalloc_session_state{state=idle} 1
	// zkalloc_session_state{state=lost} 0
	// zkalloc_session_state{state=suspended} 0
	// zkalloc_session_state{state=up} 0
}
