// Package prometheus exposes a zkalloc member's counters and state as
// Prometheus metrics. It is a module of its own, so that users of zkalloc
// who do not use it never download the Prometheus client.
//
//	m := prometheus.New(prom.Labels{"group": "billing", "member": name})
//	cfg.Metrics = m.Count // counts events: hand-offs, strategy runs, ...
//	alloc, err := zkalloc.New(cfg)
//	...
//	m.Watch(alloc)        // gauges, read from alloc.Stats() at each scrape
//	prom.MustRegister(m)
//
// Counters: zkalloc_reconnects_total, zkalloc_computes_total,
// zkalloc_handoffs_started_total, zkalloc_handoffs_done_total,
// zkalloc_release_timeouts_total, zkalloc_strategy_errors_total.
// Gauges: zkalloc_session_state{state="up"|...} (1 for the current
// state), zkalloc_generation, zkalloc_members, zkalloc_assigned,
// zkalloc_pending, zkalloc_last_compute_seconds.
package prometheus

import (
	"sync"
	"sync/atomic"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkalloc/zkalloc"
)

// counters are the events counted, each with its counter's name and help,
// in the order of Metrics.counts.
var counters = []struct {
	kind       zkalloc.EventKind
	name, help string
}{
	{zkalloc.EventReconnect, "zkalloc_reconnects_total", "Times the ZooKeeper connection came up again after the first."},
	{zkalloc.EventCompute, "zkalloc_computes_total", "Runs of the rebalance strategy."},
	{zkalloc.EventHandoffStarted, "zkalloc_handoffs_started_total", "Partitions revoked from this member's consumer while it held them."},
	{zkalloc.EventHandoffDone, "zkalloc_handoffs_done_total", "Revoked partitions whose claims this member gave up to the next owner."},
	{zkalloc.EventReleaseTimeout, "zkalloc_release_timeouts_total", "Revoked partitions given up without the consumer's ack, after ReleaseTimeout."},
	{zkalloc.EventStrategyError, "zkalloc_strategy_errors_total", "Strategy runs that failed; the previous assignment was kept."},
}

// sessionStates are the values of Stats.SessionState.
var sessionStates = []string{"connecting", "up", "suspended", "lost", "closed"}

// Metrics is a prometheus.Collector for one member. Create it with
// [New], give [Metrics.Count] to zkalloc.Config.Metrics, and
// [Metrics.Watch] the allocator for the gauges. It is safe for concurrent
// use.
type Metrics struct {
	counts   []atomic.Uint64 // parallel to counters
	counters []*prom.Desc

	state                                               *prom.Desc
	generation, members, assigned, pending, lastCompute *prom.Desc

	mu    sync.Mutex
	alloc *zkalloc.Allocator
}

// New returns the metrics of one member, with labels (for example the
// group and the member's name) on every metric.
func New(labels prom.Labels) *Metrics {
	m := &Metrics{counts: make([]atomic.Uint64, len(counters))}
	for _, c := range counters {
		m.counters = append(m.counters, prom.NewDesc(c.name, c.help, nil, labels))
	}
	gauge := func(name, help string, varLabels ...string) *prom.Desc {
		return prom.NewDesc("zkalloc_"+name, help, varLabels, labels)
	}
	m.state = gauge("session_state", "1 for the ZooKeeper session's current state, 0 for the others.", "state")
	m.generation = gauge("generation", "Generation (ZooKeeper zxid) of the newest assignment.")
	m.members = gauge("members", "Members of the group in the newest assignment.")
	m.assigned = gauge("assigned", "Partitions assigned to this member.")
	m.pending = gauge("pending", "Partitions given to this member that their previous owner has not released yet.")
	m.lastCompute = gauge("last_compute_seconds", "How long the latest strategy run took.")
	return m
}

// Count counts ev; it is meant for zkalloc.Config.Metrics.
func (m *Metrics) Count(ev zkalloc.Event) {
	for i, c := range counters {
		if c.kind == ev.Kind {
			m.counts[i].Add(ev.Count)
			return
		}
	}
}

// Watch makes the gauges report a's Stats. Before Watch, only the
// counters are collected.
func (m *Metrics) Watch(a *zkalloc.Allocator) {
	m.mu.Lock()
	m.alloc = a
	m.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prom.Desc) {
	for _, d := range m.counters {
		ch <- d
	}
	for _, d := range []*prom.Desc{m.state, m.generation, m.members, m.assigned, m.pending, m.lastCompute} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prom.Metric) {
	for i, d := range m.counters {
		ch <- prom.MustNewConstMetric(d, prom.CounterValue, float64(m.counts[i].Load()))
	}
	m.mu.Lock()
	a := m.alloc
	m.mu.Unlock()
	if a == nil {
		return
	}
	s := a.Stats()
	for _, st := range sessionStates {
		v := 0.0
		if st == s.SessionState {
			v = 1
		}
		ch <- prom.MustNewConstMetric(m.state, prom.GaugeValue, v, st)
	}
	ch <- prom.MustNewConstMetric(m.generation, prom.GaugeValue, float64(s.Generation))
	ch <- prom.MustNewConstMetric(m.members, prom.GaugeValue, float64(s.Members))
	ch <- prom.MustNewConstMetric(m.assigned, prom.GaugeValue, float64(s.Assigned))
	ch <- prom.MustNewConstMetric(m.pending, prom.GaugeValue, float64(s.Pending))
	ch <- prom.MustNewConstMetric(m.lastCompute, prom.GaugeValue, s.LastCompute.Seconds())
}
