package prometheus_test

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zkalloc/zkalloc"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
	"github.com/zkalloc/zkalloc/session"
)

// TestCollectorReportsStats: every field of Stats but SessionID and
// LastCompute is reported, under its name, type and help, with the
// labels on each, and the set passes Prometheus's lint.
func TestCollectorReportsStats(t *testing.T) {
	s := zkalloc.Stats{
		SessionState: "suspended", SessionID: 0x1234,
		Reconnects: 1, Generation: 4294967298, Members: 3, Assigned: 4, Pending: 5,
		Computes: 6, LastCompute: 1500 * time.Millisecond,
		HandoffsStarted: 7, HandoffsDone: 8, ReleaseTimeouts: 9, StrategyErrors: 10,
		SessionsLost: 11, RevokedHandoff: 12, RevokedShutdown: 13, RevokedLost: 14,
		RecordWrites: 15, RecordConflicts: 16,
		SessionTimeout: 4 * time.Second,
	}
	// 6 runs: 2 of 100µs, 1 of 2ms, 2 of 1.5s, 1 of a minute.
	for _, d := range []time.Duration{100 * time.Microsecond, 100 * time.Microsecond, 2 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, time.Minute} {
		for i, b := range zkalloc.HistogramBounds() {
			if d <= b {
				s.ComputeTimes.Buckets[i]++
			}
		}
		s.ComputeTimes.Count++
		s.ComputeTimes.Sum += d
	}
	c := zkprom.NewStatsCollector(func() zkalloc.Stats { return s }, prom.Labels{"group": "g", "member": "m"})
	want := `
# HELP zkalloc_reconnects_total Times the ZooKeeper connection came up again after the first.
# TYPE zkalloc_reconnects_total counter
zkalloc_reconnects_total{group="g",member="m"} 1
# HELP zkalloc_handoffs_started_total Partitions revoked from this member's consumer while it held them.
# TYPE zkalloc_handoffs_started_total counter
zkalloc_handoffs_started_total{group="g",member="m"} 7
# HELP zkalloc_handoffs_done_total Revoked partitions whose claims this member gave up to the next owner.
# TYPE zkalloc_handoffs_done_total counter
zkalloc_handoffs_done_total{group="g",member="m"} 8
# HELP zkalloc_release_timeouts_total Revoked partitions given up without the consumer's ack, after ReleaseTimeout.
# TYPE zkalloc_release_timeouts_total counter
zkalloc_release_timeouts_total{group="g",member="m"} 9
# HELP zkalloc_strategy_errors_total Strategy runs that failed; the previous assignment was kept.
# TYPE zkalloc_strategy_errors_total counter
zkalloc_strategy_errors_total{group="g",member="m"} 10
# HELP zkalloc_sessions_lost_total ZooKeeper sessions (or their leases) this member lost.
# TYPE zkalloc_sessions_lost_total counter
zkalloc_sessions_lost_total{group="g",member="m"} 11
# HELP zkalloc_revoked_partitions_total Partitions revoked from this member's consumer, by cause: handoff (the assignment moved them), shutdown (Shutdown, Close or a fatal error), lost (the session or its lease was lost; another member may own them already).
# TYPE zkalloc_revoked_partitions_total counter
zkalloc_revoked_partitions_total{cause="handoff",group="g",member="m"} 12
zkalloc_revoked_partitions_total{cause="lost",group="g",member="m"} 14
zkalloc_revoked_partitions_total{cause="shutdown",group="g",member="m"} 13
# HELP zkalloc_record_writes_total Sticky assignment records this member computed and wrote.
# TYPE zkalloc_record_writes_total counter
zkalloc_record_writes_total{group="g",member="m"} 15
# HELP zkalloc_record_conflicts_total Sticky assignment records this member computed but lost to another member's write.
# TYPE zkalloc_record_conflicts_total counter
zkalloc_record_conflicts_total{group="g",member="m"} 16
# HELP zkalloc_session_timeout_seconds The session timeout the ZooKeeper server granted; 0 before the first session.
# TYPE zkalloc_session_timeout_seconds gauge
zkalloc_session_timeout_seconds{group="g",member="m"} 4
# HELP zkalloc_generation Generation (ZooKeeper zxid) of the newest assignment.
# TYPE zkalloc_generation gauge
zkalloc_generation{group="g",member="m"} 4.294967298e+09
# HELP zkalloc_group_members Members of the group in the newest assignment.
# TYPE zkalloc_group_members gauge
zkalloc_group_members{group="g",member="m"} 3
# HELP zkalloc_assigned_partitions Partitions assigned to this member.
# TYPE zkalloc_assigned_partitions gauge
zkalloc_assigned_partitions{group="g",member="m"} 4
# HELP zkalloc_pending_partitions Partitions given to this member that their previous owner has not released yet.
# TYPE zkalloc_pending_partitions gauge
zkalloc_pending_partitions{group="g",member="m"} 5
# HELP zkalloc_compute_duration_seconds How long the rebalance strategy's runs took.
# TYPE zkalloc_compute_duration_seconds histogram
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.0001"} 2
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.00025"} 2
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.0005"} 2
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.001"} 2
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.0025"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.005"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.01"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.025"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.05"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.1"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.25"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="0.5"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="1"} 3
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="2.5"} 5
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="5"} 5
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="10"} 5
zkalloc_compute_duration_seconds_bucket{group="g",member="m",le="+Inf"} 6
zkalloc_compute_duration_seconds_sum{group="g",member="m"} 63.0022
zkalloc_compute_duration_seconds_count{group="g",member="m"} 6
# HELP zkalloc_session_state 1 for the ZooKeeper session's current state, 0 for the others; idle before Start.
# TYPE zkalloc_session_state gauge
zkalloc_session_state{group="g",member="m",state="closed"} 0
zkalloc_session_state{group="g",member="m",state="connecting"} 0
zkalloc_session_state{group="g",member="m",state="idle"} 0
zkalloc_session_state{group="g",member="m",state="lost"} 0
zkalloc_session_state{group="g",member="m",state="suspended"} 1
zkalloc_session_state{group="g",member="m",state="up"} 0
# HELP zkalloc_build_info Always 1: the zkalloc module's version and the Go version this program was built with.
# TYPE zkalloc_build_info gauge
zkalloc_build_info{goversion="` + runtime.Version() + `",group="g",member="m",version="(devel)"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestModuleVersion: zkalloc_build_info's version is the zkalloc
// module's as the go command recorded it, "(devel)" when it has none.
func TestModuleVersion(t *testing.T) {
	const path = "github.com/zkalloc/zkalloc"
	other := &debug.Module{Path: "example.com/other", Version: "v9.9.9"}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "(devel)"},
		{"a dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{other, {Path: path, Version: "v0.3.1"}}}, "v0.3.1"},
		{"replaced by a version", &debug.BuildInfo{Deps: []*debug.Module{{Path: path, Version: "v0.3.1", Replace: &debug.Module{Path: "example.com/fork", Version: "v0.3.2"}}}}, "v0.3.2"},
		{"replaced by a directory", &debug.BuildInfo{Deps: []*debug.Module{{Path: path, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "../.."}}}}, "(devel)"},
		{"in a workspace", &debug.BuildInfo{Deps: []*debug.Module{{Path: path}}}, "(devel)"},
		{"the main module", &debug.BuildInfo{Main: debug.Module{Path: path, Version: "(devel)"}}, "(devel)"},
		{"the main module, tagged", &debug.BuildInfo{Main: debug.Module{Path: path, Version: "v1.0.0"}}, "v1.0.0"},
		{"not built in", &debug.BuildInfo{Deps: []*debug.Module{other}}, "(devel)"},
	}
	for _, tt := range tests {
		if got := zkprom.ModuleVersion(tt.bi); got != tt.want {
			t.Errorf("%s: version %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestCollectorTable: a metric the table lists once per value of a
// label is one metric with that label; a name listed twice otherwise is
// refused when the collector is made.
func TestCollectorTable(t *testing.T) {
	s := zkalloc.Stats{HandoffsDone: 2, ReleaseTimeouts: 3}
	c := zkprom.NewTableCollector(func() zkalloc.Stats { return s }, []zkprom.Metric{
		zkprom.With(zkprom.Counter("zkalloc_test_total", "Test.", func(s *zkalloc.Stats) uint64 { return s.HandoffsDone }), "cause", "a"),
		zkprom.With(zkprom.Counter("zkalloc_test_total", "Test.", func(s *zkalloc.Stats) uint64 { return s.ReleaseTimeouts }), "cause", "b"),
	})
	const want = `
# HELP zkalloc_test_total Test.
# TYPE zkalloc_test_total counter
zkalloc_test_total{cause="a"} 2
zkalloc_test_total{cause="b"} 3
`
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "zkalloc_test_total"); err != nil {
		t.Error(err)
	}

	for _, tt := range []struct {
		name string
		ms   []zkprom.Metric
	}{
		{"twice, no label", []zkprom.Metric{
			zkprom.Counter("zkalloc_x_total", "X.", func(s *zkalloc.Stats) uint64 { return 0 }),
			zkprom.Counter("zkalloc_x_total", "X.", func(s *zkalloc.Stats) uint64 { return 0 }),
		}},
		{"another help", []zkprom.Metric{
			zkprom.With(zkprom.Counter("zkalloc_x_total", "X.", func(s *zkalloc.Stats) uint64 { return 0 }), "l", "a"),
			zkprom.With(zkprom.Counter("zkalloc_x_total", "Y.", func(s *zkalloc.Stats) uint64 { return 0 }), "l", "b"),
		}},
		{"another type", []zkprom.Metric{
			zkprom.With(zkprom.Counter("zkalloc_x", "X.", func(s *zkalloc.Stats) uint64 { return 0 }), "l", "a"),
			zkprom.With(zkprom.Gauge("zkalloc_x", "X.", func(s *zkalloc.Stats) float64 { return 0 }), "l", "b"),
		}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: the collector was made", tt.name)
				}
			}()
			zkprom.NewTableCollector(func() zkalloc.Stats { return s }, tt.ms)
		}()
	}
}

// TestCollectorOneSnapshot: a scrape takes Stats once, and reports
// every metric from that one snapshot, even when Stats changes between
// calls.
func TestCollectorOneSnapshot(t *testing.T) {
	calls := 0
	c := zkprom.NewStatsCollector(func() zkalloc.Stats {
		calls++ // a registry collects one collector in one goroutine
		n := uint64(calls)
		s := zkalloc.Stats{
			SessionState: "up", Reconnects: n, Computes: n,
			HandoffsStarted: n, HandoffsDone: n, ReleaseTimeouts: n, StrategyErrors: n,
			Generation: int64(n), Members: int(n), Assigned: int(n), Pending: int(n),
			LastCompute: time.Duration(n) * time.Second, SessionTimeout: time.Duration(n) * time.Second,
			SessionsLost: n, RevokedHandoff: n, RevokedShutdown: n, RevokedLost: n,
			RecordWrites: n, RecordConflicts: n,
		}
		s.ComputeTimes.Count, s.ComputeTimes.Sum = n, time.Duration(n)*time.Second
		for i := range s.ComputeTimes.Buckets {
			s.ComputeTimes.Buckets[i] = n
		}
		return s
	}, nil)
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(c)
	for scrape := 1; scrape <= 3; scrape++ {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if calls != scrape {
			t.Fatalf("%d scrapes called Stats %d times, want once each", scrape, calls)
		}
		for key, v := range values(fams) {
			if !strings.HasPrefix(key, "zkalloc_session_state") && !strings.HasPrefix(key, "zkalloc_build_info") && v != float64(scrape) {
				t.Errorf("scrape %d: %s = %v, want %d (the scrape's one snapshot)", scrape, key, v, scrape)
			}
		}
	}
}

// TestCollectorSessionState: zkalloc_session_state is 1 for the state
// Stats reports, whichever it is ("idle" before Start included), and 0
// for every other; an unknown state sets none.
func TestCollectorSessionState(t *testing.T) {
	states := []string{"unknown", zkalloc.StateIdle}
	for st := session.Connecting; st <= session.Closed; st++ {
		states = append(states, st.String())
	}
	for _, state := range states {
		t.Run(state, func(t *testing.T) {
			c := zkprom.NewStatsCollector(func() zkalloc.Stats { return zkalloc.Stats{SessionState: state} }, nil)
			reg := prom.NewPedanticRegistry()
			reg.MustRegister(c)
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			on, off := 0, 0
			for key, v := range values(fams) {
				if !strings.HasPrefix(key, "zkalloc_session_state{") {
					continue
				}
				want := 0.0
				if key == `zkalloc_session_state{state="`+state+`"}` {
					want = 1
				}
				if v != want {
					t.Errorf("%s = %v, want %v", key, v, want)
				}
				if v == 1 {
					on++
				} else {
					off++
				}
			}
			if on+off != len(states)-1 {
				t.Errorf("%d zkalloc_session_state series, want one per session status (%d)", on+off, len(states)-1)
			}
		})
	}
}

func TestNewCollectorNilAllocator(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewCollector(nil, nil) did not panic")
		}
	}()
	zkprom.NewCollector(nil, nil)
}
