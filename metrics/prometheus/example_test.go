package prometheus_test

import (
	"context"
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
	defer alloc.Close()

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
