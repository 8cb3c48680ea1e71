package prometheus

import (
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkalloc/zkalloc"
)

// NewStatsCollector is NewCollector over any source of Stats, for tests
// that report Stats of their own.
func NewStatsCollector(stats func() zkalloc.Stats, labels prom.Labels) prom.Collector {
	return newCollector(stats, labels)
}
