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

func TestPodFailures(t *testing.T) {
	counts := map[string]uint64{}
	m := metrics.New("v", "c", func() hsync.Report { return hsync.Report{} }, func() []sources.Status { return nil })
	m.PodFailures(func() map[string]uint64 { return counts })
	if mf := scrape(t, m.Handler())["hostlet_pod_failures_total"]; mf != nil {
		t.Fatalf("hostlet_pod_failures_total before any failure: %v, want none", mf)
	}
	counts = map[string]uint64{"ErrImagePull": 3, "EngineUnavailable": 1}
	mfs := scrape(t, m.Handler())
	if mf := mfs["hostlet_pod_failures_total"]; mf == nil || mf.GetType() != dto.MetricType_COUNTER || mf.GetHelp() == "" {
		t.Fatalf("hostlet_pod_failures_total: %v, want a counter with help", mf)
	}
	want(t, mfs, "hostlet_pod_failures_total", map[string]string{"reason": "ErrImagePull"}, 3)
	want(t, mfs, "hostlet_pod_failures_total", map[string]string{"reason": "EngineUnavailable"}, 1)
}

// TestUnprovenContainers: the containers and events hostlet leaves alone
// because it cannot prove it made them are a gauge and a counter read at
// scrape time.
func TestUnprovenContainers(t *testing.T) {
	var listed atomic.Int64
	var events atomic.Uint64
	m := metrics.New("v", "c", func() hsync.Report { return hsync.Report{} }, func() []sources.Status { return nil })
	m.UnprovenContainers(func() int { return int(listed.Load()) }, events.Load)
	mfs := scrape(t, m.Handler())
	if mf := mfs["hostlet_unproven_containers"]; mf == nil || mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
		t.Fatalf("hostlet_unproven_containers: %v, want a gauge with help", mf)
	}
	if mf := mfs["hostlet_unproven_container_events_dropped_total"]; mf == nil || mf.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("hostlet_unproven_container_events_dropped_total: %v, want a counter", mf)
	}
	listed.Store(2)
	events.Add(5)
	mfs = scrape(t, m.Handler())
	want(t, mfs, "hostlet_unproven_containers", nil, 2)
	want(t, mfs, "hostlet_unproven_container_events_dropped_total", nil, 5)
}
