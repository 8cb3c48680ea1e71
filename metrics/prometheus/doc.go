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
// and reports every counter and gauge from it, so the values of one
// scrape are of one moment. Between scrapes nothing runs: the collector
// starts no goroutine and keeps no counts of its own. It does not need
// [zkalloc.Config.Metrics]; leave that hook to sinks of your own. The
// counters are those of Stats, which count from [zkalloc.Allocator.Start]
// and never go down, not even after Close.
//
// The metrics, each with the field of Stats it reports:
//
//	zkalloc_reconnects_total          counter  Reconnects
//	zkalloc_computes_total            counter  Computes
//	zkalloc_handoffs_started_total    counter  HandoffsStarted
//	zkalloc_handoffs_done_total       counter  HandoffsDone
//	zkalloc_release_timeouts_total    counter  ReleaseTimeouts
//	zkalloc_strategy_errors_total     counter  StrategyErrors
//	zkalloc_session_state{state=...}  gauge    SessionState: 1 for the current state, 0 for the others
//	                                           ("connecting", "up", "suspended", "lost", "closed")
//	zkalloc_generation                gauge    Generation
//	zkalloc_members                   gauge    Members
//	zkalloc_assigned                  gauge    Assigned
//	zkalloc_pending                   gauge    Pending
//	zkalloc_last_compute_seconds      gauge    LastCompute
package prometheus
