package prometheus

import (
	"runtime/debug"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkalloc/zkalloc"
)

// NewStatsCollector is NewCollector over any source of Stats, for tests
// that report Stats of their own.
func NewStatsCollector(stats func() zkalloc.Stats, labels prom.Labels) prom.Collector {
	return newCollector(stats, labels, metrics)
}

// Metric is an entry of the collector's table, for tests of the table's
// rules.
type Metric = metric

var (
	Counter = counter
	Gauge   = gauge
)

// With is metric.with.
func With(m Metric, name, value string) Metric { return m.with(name, value) }

// NewTableCollector is NewStatsCollector over a table of metrics of its
// own.
func NewTableCollector(stats func() zkalloc.Stats, ms []Metric) prom.Collector {
	return newCollector(stats, nil, ms)
}

// ModuleVersion is moduleVersion.
func ModuleVersion(bi *debug.BuildInfo) string { return moduleVersion(bi, bi != nil) }
