package prometheus

import (
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/session"
)

// counters are the counters' names and help, each with its field of Stats.
var counters = []struct {
	name, help string
	value      func(*zkalloc.Stats) uint64
}{
	{"zkalloc_reconnects_total", "Times the ZooKeeper connection came up again after the first.", func(s *zkalloc.Stats) uint64 { return s.Reconnects }},
	{"zkalloc_computes_total", "Runs of the rebalance strategy.", func(s *zkalloc.Stats) uint64 { return s.Computes }},
	{"zkalloc_handoffs_started_total", "Partitions revoked from this member's consumer while it held them.", func(s *zkalloc.Stats) uint64 { return s.HandoffsStarted }},
	{"zkalloc_handoffs_done_total", "Revoked partitions whose claims this member gave up to the next owner.", func(s *zkalloc.Stats) uint64 { return s.HandoffsDone }},
	{"zkalloc_release_timeouts_total", "Revoked partitions given up without the consumer's ack, after ReleaseTimeout.", func(s *zkalloc.Stats) uint64 { return s.ReleaseTimeouts }},
	{"zkalloc_strategy_errors_total", "Strategy runs that failed; the previous assignment was kept.", func(s *zkalloc.Stats) uint64 { return s.StrategyErrors }},
}

// gauges are the gauges' names and help, each with its field of Stats;
// zkalloc_session_state, which has a label, is apart.
var gauges = []struct {
	name, help string
	value      func(*zkalloc.Stats) float64
}{
	{"zkalloc_generation", "Generation (ZooKeeper zxid) of the newest assignment.", func(s *zkalloc.Stats) float64 { return float64(s.Generation) }},
	{"zkalloc_members", "Members of the group in the newest assignment.", func(s *zkalloc.Stats) float64 { return float64(s.Members) }},
	{"zkalloc_assigned", "Partitions assigned to this member.", func(s *zkalloc.Stats) float64 { return float64(s.Assigned) }},
	{"zkalloc_pending", "Partitions given to this member that their previous owner has not released yet.", func(s *zkalloc.Stats) float64 { return float64(s.Pending) }},
	{"zkalloc_last_compute_seconds", "How long the latest strategy run took.", func(s *zkalloc.Stats) float64 { return s.LastCompute.Seconds() }},
}

// sessionStates are the values Stats.SessionState takes, each a value of
// zkalloc_session_state's label.
var sessionStates = []string{
	session.Connecting.String(), session.Up.String(), session.Suspended.String(),
	session.Lost.String(), session.Closed.String(),
}

// NewCollector returns a prometheus.Collector that reports a's Stats: at
// each scrape it takes one snapshot, a.Stats(), and reports every metric
// from it (see the package doc for the names). Labels, which may be nil,
// are put on every metric: give each member of a process labels of its
// own, such as the group and the member's name, since a registry takes
// no two collectors with the same metrics and labels.
//
// The collector starts nothing and may be registered before a.Start and
// kept after a.Close (Stats then reports what it did); it is safe for
// concurrent use. NewCollector panics if a is nil.
func NewCollector(a *zkalloc.Allocator, labels prom.Labels) prom.Collector {
	if a == nil {
		panic("zkalloc/metrics/prometheus: NewCollector with a nil Allocator")
	}
	return newCollector(a.Stats, labels)
}

// collector reports the snapshots stats returns.
type collector struct {
	stats    func() zkalloc.Stats
	counters []*prom.Desc // parallel to counters
	gauges   []*prom.Desc // parallel to gauges
	state    *prom.Desc
}

func newCollector(stats func() zkalloc.Stats, labels prom.Labels) *collector {
	c := &collector{stats: stats}
	for _, m := range counters {
		c.counters = append(c.counters, prom.NewDesc(m.name, m.help, nil, labels))
	}
	for _, m := range gauges {
		c.gauges = append(c.gauges, prom.NewDesc(m.name, m.help, nil, labels))
	}
	c.state = prom.NewDesc("zkalloc_session_state", "1 for the ZooKeeper session's current state, 0 for the others.", []string{"state"}, labels)
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prom.Desc) {
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range c.gauges {
		ch <- d
	}
	ch <- c.state
}

// Collect implements prometheus.Collector: every metric from one Stats.
func (c *collector) Collect(ch chan<- prom.Metric) {
	s := c.stats()
	for i, m := range counters {
		ch <- prom.MustNewConstMetric(c.counters[i], prom.CounterValue, float64(m.value(&s)))
	}
	for i, m := range gauges {
		ch <- prom.MustNewConstMetric(c.gauges[i], prom.GaugeValue, m.value(&s))
	}
	for _, st := range sessionStates {
		v := 0.0
		if st == s.SessionState {
			v = 1
		}
		ch <- prom.MustNewConstMetric(c.state, prom.GaugeValue, v, st)
	}
}
