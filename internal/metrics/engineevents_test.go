package metrics_test

import (
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestEngineEventsDropped: hostlet_engine_events_dropped_total is a
// counter read at scrape time from the reconciler's count.
func TestEngineEventsDropped(t *testing.T) {
	var dropped atomic.Uint64
	m := metrics.New("v", "c", func() hsync.Report { return hsync.Report{} }, func() []sources.Status { return nil })
	m.EngineEventsDropped(dropped.Load)
	mfs := scrape(t, m.Handler())
	if mf := mfs["hostlet_engine_events_dropped_total"]; mf == nil || mf.GetType() != dto.MetricType_COUNTER || mf.GetHelp() == "" {
		t.Fatalf("hostlet_engine_events_dropped_total: %v, want a counter with help", mf)
	}
	want(t, mfs, "hostlet_engine_events_dropped_total", nil, 0)
	dropped.Add(7)
	want(t, scrape(t, m.Handler()), "hostlet_engine_events_dropped_total", nil, 7)
}
