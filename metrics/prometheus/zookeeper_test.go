package prometheus_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zkalloc/zkalloc"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
	"github.com/zkalloc/zkalloc/zkserver"
)

const testTimeout = 30 * time.Second

// start starts a member whose consumer acks every Update; it is closed
// when the test ends.
func start(t *testing.T, cfg zkalloc.Config) *zkalloc.Allocator {
	t.Helper()
	a, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := range a.Updates() {
			u.Ack()
		}
	}()
	t.Cleanup(func() { a.Close(); <-done })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

// values maps each series of fams, written name{label="value",...} with
// the labels in the order gathered (sorted by name), to its value.
func values(fams []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[f.GetName()+"_count"+strings.TrimPrefix(key, f.GetName())] = float64(h.GetSampleCount())
				out[f.GetName()+"_sum"+strings.TrimPrefix(key, f.GetName())] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					le := fmt.Sprintf("le=%q", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
					out[f.GetName()+"_bucket{"+strings.Join(append(labels, le), ",")+"}"] = float64(b.GetCumulativeCount())
				}
			default:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// want is what values should give for a scrape of s, labelled
// group="g", member=member.
func want(s zkalloc.Stats, member string) map[string]float64 {
	labels := func(more string) string { return `{group="g",member="` + member + `"` + more + "}" }
	out := map[string]float64{
		"zkalloc_reconnects_total" + labels(""):                                                                         float64(s.Reconnects),
		"zkalloc_handoffs_started_total" + labels(""):                                                                   float64(s.HandoffsStarted),
		"zkalloc_handoffs_done_total" + labels(""):                                                                      float64(s.HandoffsDone),
		"zkalloc_release_timeouts_total" + labels(""):                                                                   float64(s.ReleaseTimeouts),
		"zkalloc_strategy_errors_total" + labels(""):                                                                    float64(s.StrategyErrors),
		"zkalloc_sessions_lost_total" + labels(""):                                                                      float64(s.SessionsLost),
		`zkalloc_revoked_partitions_total{cause="handoff",group="g",member="` + member + `"}`:                           float64(s.RevokedHandoff),
		`zkalloc_revoked_partitions_total{cause="shutdown",group="g",member="` + member + `"}`:                          float64(s.RevokedShutdown),
		`zkalloc_revoked_partitions_total{cause="lost",group="g",member="` + member + `"}`:                              float64(s.RevokedLost),
		"zkalloc_record_writes_total" + labels(""):                                                                      float64(s.RecordWrites),
		"zkalloc_record_conflicts_total" + labels(""):                                                                   float64(s.RecordConflicts),
		"zkalloc_session_timeout_seconds" + labels(""):                                                                  s.SessionTimeout.Seconds(),
		"zkalloc_generation" + labels(""):                                                                               float64(s.Generation),
		"zkalloc_group_members" + labels(""):                                                                            float64(s.Members),
		"zkalloc_assigned_partitions" + labels(""):                                                                      float64(s.Assigned),
		"zkalloc_pending_partitions" + labels(""):                                                                       float64(s.Pending),
		"zkalloc_compute_duration_seconds_count" + labels(""):                                                           float64(s.Computes),
		"zkalloc_compute_duration_seconds_sum" + labels(""):                                                             s.ComputeTimes.Sum.Seconds(),
		`zkalloc_build_info{goversion="` + runtime.Version() + `",group="g",member="` + member + `",version="(devel)"}`: 1,
	}
	for i, b := range zkalloc.HistogramBounds() {
		le := strconv.FormatFloat(b.Seconds(), 'g', -1, 64)
		out["zkalloc_compute_duration_seconds_bucket"+labels(`,le="`+le+`"`)] = float64(s.ComputeTimes.Buckets[i])
	}
	for _, st := range []string{"idle", "connecting", "up", "suspended", "lost", "closed"} {
		v := 0.0
		if st == s.SessionState {
			v = 1
		}
		out["zkalloc_session_state"+labels(`,state="`+st+`"`)] = v
	}
	return out
}

// noCounterDown fails t if a counter of next is below its value in prev.
func noCounterDown(t *testing.T, prev, next map[string]float64) {
	t.Helper()
	for _, key := range slices.Sorted(maps.Keys(prev)) {
		if strings.Contains(key, "_total{") && next[key] < prev[key] {
			t.Fatalf("%s went down from %v to %v between scrapes", key, prev[key], next[key])
		}
	}
}

// TestCollector scrapes a member on a real ZooKeeper, with no
// Config.Metrics, while it hands partitions to a second member and after
// it closes: every scrape reports the member's Stats, and no counter
// goes down.
func TestCollector(t *testing.T) {
	srv := zkserver.Start(t)
	cfg := zkalloc.Config{
		Servers: srv.Servers(), Group: "g", Member: "a",
		Partitions: map[string][]int32{"t": {0, 1, 2, 3, 4, 5}},
		Logger:     slog.New(slog.DiscardHandler),
	}
	a := start(t, cfg)
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(zkprom.NewCollector(a, prom.Labels{"group": "g", "member": "a"}))
	scrape := func() map[string]float64 {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return values(fams)
	}

	cfgB := cfg
	cfgB.Member, cfgB.Partitions = "b", nil
	start(t, cfgB)

	// a hands partitions to b. Once it has, and a scrape falls between two
	// equal Stats, that scrape reports them.
	prev := scrape()
	deadline := time.Now().Add(testTimeout)
	for {
		before := a.Stats()
		got := scrape()
		after := a.Stats()
		noCounterDown(t, prev, got)
		prev = got
		problem := ""
		switch {
		case after.Members != 2 || after.Pending != 0 || after.HandoffsDone == 0 || after.SessionState != "up":
			problem = fmt.Sprintf("stats %+v: no hand-off to b yet", after)
		case before != after:
			problem = fmt.Sprintf("stats changed during the scrape: %+v, then %+v", before, after)
		case !maps.Equal(got, want(after, "a")):
			problem = fmt.Sprintf("scrape %v, want %v (stats %+v)", got, want(after, "a"), after)
		}
		if problem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(problem)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// After Close, Stats stays as it is, and the collector still reports
	// it, counters included.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := scrape()
	noCounterDown(t, prev, got)
	if s := a.Stats(); !maps.Equal(got, want(s, "a")) {
		t.Errorf("after Close: scrape %v, want %v (stats %+v)", got, want(s, "a"), s)
	}
}

// TestCollectorBeforeStart: before Start, the session state is "idle",
// not "connecting" (no session has been asked for), and every count is 0.
func TestCollectorBeforeStart(t *testing.T) {
	a, err := zkalloc.New(zkalloc.Config{Servers: []string{"127.0.0.1:1"}, Group: "g", Member: "a", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(zkprom.NewCollector(a, prom.Labels{"group": "g", "member": "a"}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := values(fams)
	if w := want(zkalloc.Stats{SessionState: "idle"}, "a"); !maps.Equal(got, w) {
		t.Errorf("scrape before Start %v, want %v", got, w)
	}
	if got[`zkalloc_session_state{group="g",member="a",state="idle"}`] != 1 || got[`zkalloc_session_state{group="g",member="a",state="connecting"}`] != 0 {
		t.Errorf("before Start: session state %v, want idle", got)
	}
}
