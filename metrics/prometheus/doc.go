// Package prometheus exposes a zkalloc member's [zkalloc.Stats] as
// Prometheus metrics. It is a module of its own, so that users of zkalloc
// who do not use it never download the Prometheus client.
//
//	import zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
//
//	alloc, err := zkalloc.New(cfg)
//	...
//	reg.MustRegister(zkprom.NewCollector(alloc, prometheus.Labels{"group": "billing", "member": name}))
//
// The collector reads the allocator at scrape time, and only then: each
// scrape takes one [zkalloc.Allocator.Stats] snapshot (an atomic load)
// and reports every metric from it, so the values of one
// scrape are of one moment. Between scrapes nothing runs: the collector
// starts no goroutine and keeps no counts of its own. It does not need
// [zkalloc.Config.Metrics]; leave that hook to sinks of your own. The
// counters are those of Stats, which count from [zkalloc.Allocator.Start]
// and never go down, not even after Close.
//
// The metrics, each with the field of Stats it reports. The names follow
// Prometheus's conventions (a noun, base units, counters ending in
// _total); docs/cli-and-metrics.md lists the names they replace.
//
//	zkalloc_reconnects_total          counter    Reconnects
//	zkalloc_handoffs_started_total    counter    HandoffsStarted
//	zkalloc_handoffs_done_total       counter    HandoffsDone
//	zkalloc_release_timeouts_total    counter    ReleaseTimeouts
//	zkalloc_strategy_errors_total     counter    StrategyErrors
//	zkalloc_sessions_lost_total       counter    SessionsLost
//	zkalloc_revoked_partitions_total{cause=...}
//	                                  counter    RevokedHandoff ("handoff"), RevokedShutdown
//	                                             ("shutdown"), RevokedLost ("lost")
//	zkalloc_session_timeout_seconds   gauge      SessionTimeout, the granted one
//	zkalloc_compute_duration_seconds  histogram  ComputeTimes (its _count is Computes);
//	                                             buckets from 100µs to 10s (zkalloc.HistogramBounds)
//	zkalloc_session_state{state=...}  gauge      SessionState: 1 for the current state, 0 for the others
//	                                             ("idle" before Start, "connecting", "up", "suspended",
//	                                             "lost", "closed")
//	zkalloc_generation                gauge      Generation
//	zkalloc_group_members             gauge      Members
//	zkalloc_assigned_partitions       gauge      Assigned
//	zkalloc_pending_partitions        gauge      Pending
//	zkalloc_build_info{version=...,goversion=...}
//	                                  gauge      always 1: the zkalloc module's version in this
//	                                             program's build information ("(devel)" if it has
//	                                             none) and the Go version it was built with
package prometheus
