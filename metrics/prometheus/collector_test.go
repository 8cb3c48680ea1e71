package prometheus_test

import (
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zkalloc/zkalloc"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
	"github.com/zkalloc/zkalloc/session"
)

// TestCollectorReportsStats: every field of Stats but SessionID is
// reported, under its name, type and help, with the labels on each.
func TestCollectorReportsStats(t *testing.T) {
	s := zkalloc.Stats{
		SessionState: "suspended", SessionID: 0x1234,
		Reconnects: 1, Generation: 4294967298, Members: 3, Assigned: 4, Pending: 5,
		Computes: 6, LastCompute: 1500 * time.Millisecond,
		HandoffsStarted: 7, HandoffsDone: 8, ReleaseTimeouts: 9, StrategyErrors: 10,
	}
	c := zkprom.NewStatsCollector(func() zkalloc.Stats { return s }, prom.Labels{"group": "g", "member": "m"})
	const want = `
# HELP zkalloc_reconnects_total Times the ZooKeeper connection came up again after the first.
# TYPE zkalloc_reconnects_total counter
zkalloc_reconnects_total{group="g",member="m"} 1
# HELP zkalloc_computes_total Runs of the rebalance strategy.
# TYPE zkalloc_computes_total counter
zkalloc_computes_total{group="g",member="m"} 6
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
# HELP zkalloc_generation Generation (ZooKeeper zxid) of the newest assignment.
# TYPE zkalloc_generation gauge
zkalloc_generation{group="g",member="m"} 4.294967298e+09
# HELP zkalloc_members Members of the group in the newest assignment.
# TYPE zkalloc_members gauge
zkalloc_members{group="g",member="m"} 3
# HELP zkalloc_assigned Partitions assigned to this member.
# TYPE zkalloc_assigned gauge
zkalloc_assigned{group="g",member="m"} 4
# HELP zkalloc_pending Partitions given to this member that their previous owner has not released yet.
# TYPE zkalloc_pending gauge
zkalloc_pending{group="g",member="m"} 5
# HELP zkalloc_last_compute_seconds How long the latest strategy run took.
# TYPE zkalloc_last_compute_seconds gauge
zkalloc_last_compute_seconds{group="g",member="m"} 1.5
# HELP zkalloc_session_state 1 for the ZooKeeper session's current state, 0 for the others.
# TYPE zkalloc_session_state gauge
zkalloc_session_state{group="g",member="m",state="closed"} 0
zkalloc_session_state{group="g",member="m",state="connecting"} 0
zkalloc_session_state{group="g",member="m",state="lost"} 0
zkalloc_session_state{group="g",member="m",state="suspended"} 1
zkalloc_session_state{group="g",member="m",state="up"} 0
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

// TestCollectorOneSnapshot: a scrape takes Stats once, and reports
// every metric from that one snapshot, even when Stats changes between
// calls.
func TestCollectorOneSnapshot(t *testing.T) {
	calls := 0
	c := zkprom.NewStatsCollector(func() zkalloc.Stats {
		calls++ // a registry collects one collector in one goroutine
		n := uint64(calls)
		return zkalloc.Stats{
			SessionState: "up", Reconnects: n, Computes: n,
			HandoffsStarted: n, HandoffsDone: n, ReleaseTimeouts: n, StrategyErrors: n,
			Generation: int64(n), Members: int(n), Assigned: int(n), Pending: int(n),
			LastCompute: time.Duration(n) * time.Second,
		}
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
			if !strings.HasPrefix(key, "zkalloc_session_state") && v != float64(scrape) {
				t.Errorf("scrape %d: %s = %v, want %d (the scrape's one snapshot)", scrape, key, v, scrape)
			}
		}
	}
}

// TestCollectorSessionState: zkalloc_session_state is 1 for the state
// Stats reports, whichever it is, and 0 for every other; an unknown
// state sets none.
func TestCollectorSessionState(t *testing.T) {
	states := []string{"unknown"}
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
