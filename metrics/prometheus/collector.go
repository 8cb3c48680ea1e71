package prometheus

import (
	"fmt"
	"runtime"
	"runtime/debug"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/session"
)

// metric is one series the collector reads from [zkalloc.Stats]: a
// counter or a gauge, with at most one label of a fixed value. Several
// entries may share a name (and then help, type and label name), one
// for each value of the label.
type metric struct {
	name, help string
	kind       prom.ValueType
	label      string // a label's name, "" for none
	labelValue string
	value      func(*zkalloc.Stats) float64
}

// counter is a counter metric read from a uint64 of Stats.
// revokedHelp is the help of every zkalloc_revoked_partitions_total
// series: one text for the one metric.
const revokedHelp = "Partitions revoked from this member's consumer, by cause: handoff (the assignment moved them), shutdown (Shutdown, Close or a fatal error), lost (the session or its lease was lost; another member may own them already)."

func counter(name, help string, value func(*zkalloc.Stats) uint64) metric {
	return metric{name: name, help: help, kind: prom.CounterValue, value: func(s *zkalloc.Stats) float64 { return float64(value(s)) }}
}

// gauge is a gauge metric.
func gauge(name, help string, value func(*zkalloc.Stats) float64) metric {
	return metric{name: name, help: help, kind: prom.GaugeValue, value: value}
}

// with returns m labelled name=value: entries of one name, each with
// its value, make one metric with that label.
func (m metric) with(name, value string) metric {
	m.label, m.labelValue = name, value
	return m
}

// metrics are the counters and gauges, in the order collected: one line
// adds one. Names follow Prometheus's conventions: a noun and a unit,
// base units (seconds), counters ending in _total. The compute
// histogram, the session state and the build info are apart.
var metrics = []metric{
	counter("zkalloc_reconnects_total", "Times the ZooKeeper connection came up again after the first.", func(s *zkalloc.Stats) uint64 { return s.Reconnects }),
	counter("zkalloc_handoffs_started_total", "Partitions revoked from this member's consumer while it held them.", func(s *zkalloc.Stats) uint64 { return s.HandoffsStarted }),
	counter("zkalloc_handoffs_done_total", "Revoked partitions whose claims this member gave up to the next owner.", func(s *zkalloc.Stats) uint64 { return s.HandoffsDone }),
	counter("zkalloc_release_timeouts_total", "Revoked partitions given up without the consumer's ack, after ReleaseTimeout.", func(s *zkalloc.Stats) uint64 { return s.ReleaseTimeouts }),
	counter("zkalloc_strategy_errors_total", "Strategy runs that failed; the previous assignment was kept.", func(s *zkalloc.Stats) uint64 { return s.StrategyErrors }),
	counter("zkalloc_sessions_lost_total", "ZooKeeper sessions (or their leases) this member lost.", func(s *zkalloc.Stats) uint64 { return s.SessionsLost }),
	counter("zkalloc_revoked_partitions_total", revokedHelp, func(s *zkalloc.Stats) uint64 { return s.RevokedHandoff }).with("cause", "handoff"),
	counter("zkalloc_revoked_partitions_total", revokedHelp, func(s *zkalloc.Stats) uint64 { return s.RevokedShutdown }).with("cause", "shutdown"),
	counter("zkalloc_revoked_partitions_total", revokedHelp, func(s *zkalloc.Stats) uint64 { return s.RevokedLost }).with("cause", "lost"),
	counter("zkalloc_record_writes_total", "Sticky assignment records this member computed and wrote.", func(s *zkalloc.Stats) uint64 { return s.RecordWrites }),
	counter("zkalloc_record_conflicts_total", "Sticky assignment records this member computed but lost to another member's write.", func(s *zkalloc.Stats) uint64 { return s.RecordConflicts }),
	gauge("zkalloc_session_timeout_seconds", "The session timeout the ZooKeeper server granted; 0 before the first session.", func(s *zkalloc.Stats) float64 { return s.SessionTimeout.Seconds() }),
	gauge("zkalloc_generation", "Generation (ZooKeeper zxid) of the newest assignment.", func(s *zkalloc.Stats) float64 { return float64(s.Generation) }),
	gauge("zkalloc_group_members", "Members of the group in the newest assignment.", func(s *zkalloc.Stats) float64 { return float64(s.Members) }),
	gauge("zkalloc_assigned_partitions", "Partitions assigned to this member.", func(s *zkalloc.Stats) float64 { return float64(s.Assigned) }),
	gauge("zkalloc_pending_partitions", "Partitions given to this member that their previous owner has not released yet.", func(s *zkalloc.Stats) float64 { return float64(s.Pending) }),
}

// sessionStates are the values Stats.SessionState takes, each a value of
// zkalloc_session_state's label: zkalloc.StateIdle before Start, then the
// session's.
var sessionStates = []string{
	zkalloc.StateIdle,
	session.Connecting.String(), session.Up.String(), session.Suspended.String(),
	session.Lost.String(), session.Closed.String(),
}

// modulePath is the module whose version zkalloc_build_info reports.
const modulePath = "github.com/zkalloc/zkalloc"

// moduleVersion returns the version of the zkalloc module in bi, as
// the go command recorded it ("v1.2.0" or a pseudo-version; a
// replacement's version if it has one), or "(devel)": zkalloc is the main
// module, replaced by a directory, or unknown.
func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	const devel = "(devel)"
	if !ok || bi == nil {
		return devel
	}
	if bi.Main.Path == modulePath {
		if bi.Main.Version == "" {
			return devel
		}
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path != modulePath {
			continue
		}
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		if v == "" {
			return devel
		}
		return v
	}
	return devel
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
	return newCollector(a.Stats, labels, metrics)
}

// collector reports the snapshots stats returns.
type collector struct {
	stats   func() zkalloc.Stats
	metrics []metric
	descs   []*prom.Desc // parallel to metrics; entries of one name share one
	compute *prom.Desc
	bounds  []float64 // zkalloc.HistogramBounds, in seconds
	state   *prom.Desc
	build   prom.Metric // constant
}

// newCollector makes a collector of the metrics ms. It panics if two of
// them share a name but not their help, type or label name: a mistake in
// the table, which every test that makes a collector finds.
func newCollector(stats func() zkalloc.Stats, labels prom.Labels, ms []metric) *collector {
	c := &collector{stats: stats, metrics: ms}
	byName := map[string]int{}
	for i, m := range ms {
		if j, ok := byName[m.name]; ok {
			if f := ms[j]; f.help != m.help || f.kind != m.kind || f.label != m.label || m.label == "" {
				panic(fmt.Sprintf("zkalloc/metrics/prometheus: %s is in the table twice, not as values of one label", m.name))
			}
			c.descs = append(c.descs, c.descs[j])
			continue
		}
		byName[m.name] = i
		var variable []string
		if m.label != "" {
			variable = []string{m.label}
		}
		c.descs = append(c.descs, prom.NewDesc(m.name, m.help, variable, labels))
	}
	c.compute = prom.NewDesc("zkalloc_compute_duration_seconds", "How long the rebalance strategy's runs took.", nil, labels)
	for _, b := range zkalloc.HistogramBounds() {
		c.bounds = append(c.bounds, b.Seconds())
	}
	c.state = prom.NewDesc("zkalloc_session_state", "1 for the ZooKeeper session's current state, 0 for the others; idle before Start.", []string{"state"}, labels)
	build := prom.NewDesc("zkalloc_build_info", "Always 1: the zkalloc module's version and the Go version this program was built with.", nil,
		mergeLabels(labels, prom.Labels{"version": moduleVersion(debug.ReadBuildInfo()), "goversion": runtime.Version()}))
	c.build = prom.MustNewConstMetric(build, prom.GaugeValue, 1)
	return c
}

// mergeLabels returns a's labels and b's.
func mergeLabels(a, b prom.Labels) prom.Labels {
	out := prom.Labels{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prom.Desc) {
	seen := map[*prom.Desc]bool{}
	for _, d := range c.descs {
		if !seen[d] {
			seen[d] = true
			ch <- d
		}
	}
	ch <- c.compute
	ch <- c.state
	ch <- c.build.Desc()
}

// Collect implements prometheus.Collector: every metric from one Stats.
func (c *collector) Collect(ch chan<- prom.Metric) {
	s := c.stats()
	for i, m := range c.metrics {
		var lv []string
		if m.label != "" {
			lv = []string{m.labelValue}
		}
		ch <- prom.MustNewConstMetric(c.descs[i], m.kind, m.value(&s), lv...)
	}
	h := s.ComputeTimes
	buckets := make(map[float64]uint64, len(c.bounds))
	for i, b := range c.bounds {
		buckets[b] = h.Buckets[i]
	}
	ch <- prom.MustNewConstHistogram(c.compute, h.Count, h.Sum.Seconds(), buckets)
	for _, st := range sessionStates {
		v := 0.0
		if st == s.SessionState {
			v = 1
		}
		ch <- prom.MustNewConstMetric(c.state, prom.GaugeValue, v, st)
	}
	ch <- c.build
}
