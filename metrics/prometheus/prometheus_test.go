package prometheus_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zktest"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
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

// values gathers reg into name{label values} → value.
func values(t *testing.T, reg *prom.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					key += "{" + l.GetValue() + "}"
				}
			}
			out[key] = value(f.GetType(), m)
		}
	}
	return out
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	if typ == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestMetrics(t *testing.T) {
	srv := zktest.Standalone(t, zktest.Options{})
	m := zkprom.New(prom.Labels{"group": "g", "member": "a"})
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(m)

	cfg := zkalloc.Config{
		Servers: []string{srv.Addr()}, Group: "g", Member: "a",
		Partitions: map[string][]int32{"t": {0, 1, 2, 3, 4, 5}},
		Logger:     slog.New(slog.DiscardHandler),
		Metrics:    m.Count,
	}
	a := start(t, cfg)
	m.Watch(a)

	cfgB := cfg
	cfgB.Member, cfgB.Partitions, cfgB.Metrics = "b", nil, nil
	start(t, cfgB)

	// a hands partitions to b; the counters and gauges follow its Stats.
	deadline := time.Now().Add(testTimeout)
	for {
		v := values(t, reg)
		s := a.Stats()
		problem := ""
		switch {
		case s.Members != 2 || s.Pending != 0 || s.HandoffsDone == 0:
			problem = fmt.Sprintf("stats %+v: no hand-off to b yet", s)
		case v["zkalloc_session_state{up}"] != 1 || v["zkalloc_session_state{lost}"] != 0:
			problem = fmt.Sprintf("session state gauges %v", v)
		case v["zkalloc_members"] != 2 || v["zkalloc_assigned"] != float64(s.Assigned) || v["zkalloc_pending"] != 0 || v["zkalloc_generation"] != float64(s.Generation):
			problem = fmt.Sprintf("gauges %v, stats %+v", v, s)
		case v["zkalloc_handoffs_done_total"] != float64(s.HandoffsDone) || v["zkalloc_handoffs_started_total"] != float64(s.HandoffsStarted) || v["zkalloc_computes_total"] != float64(s.Computes):
			problem = fmt.Sprintf("counters %v, stats %+v", v, s)
		}
		if problem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(problem)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
