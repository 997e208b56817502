package metrics_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// state is what the reconciler and the merge hold, changed by the test.
type state struct {
	mu      gosync.Mutex
	report  hsync.Report
	sources []sources.Status
}

func (s *state) Report() hsync.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report
}

func (s *state) Sources() []sources.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sources
}

func pod(id, phase string, restarts ...int) hsync.PodStatus {
	p := hsync.PodStatus{ID: id, Phase: phase}
	for i, n := range restarts {
		p.Containers = append(p.Containers, hsync.ContainerStatus{Name: []string{"app", "side"}[i], Restarts: n})
	}
	return p
}

// scrape fetches /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	return mfs
}

// value returns the value of the series of family name with the given
// labels (a subset), and whether there is exactly one such series.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	var found []*dto.Metric
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return 0, false
	}
	m := found[0]
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func want(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string, v float64) {
	t.Helper()
	got, ok := value(mfs, name, labels)
	if !ok {
		t.Errorf("%s%v: no single series", name, labels)
		return
	}
	if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// TestMetrics: every family parses, has the right type, and moves with
// the state it is read from.
func TestMetrics(t *testing.T) {
	st := &state{
		report: hsync.Report{
			Pods:     []hsync.PodStatus{pod("web", hsync.PhaseRunning, 0, 2), pod("db", hsync.PhaseRunning, 1), pod("job", hsync.PhaseSucceeded, 0)},
			Rejected: []validate.Rejection{{ID: "api", Source: "local"}},
		},
		sources: []sources.Status{
			{Name: "fleet", Type: "git", Revision: "3f2a9c1"},
			{Name: "cmdb", Type: "http", Error: "GET https://cmdb/: 500 Internal Server Error"},
		},
	}
	m := metrics.New("v1.2.3", "abc123", st.Report, st.Sources)
	h := m.Handler()

	// Before any sync or source read: zero counters, no fetch series.
	mfs := scrape(t, h)
	want(t, mfs, "hostlet_syncs_total", nil, 0)
	if mf := mfs["hostlet_source_fetch_duration_seconds"]; mf != nil {
		t.Errorf("fetch durations before any read: %v", mf)
	}
	types := map[string]dto.MetricType{
		"hostlet_sync_duration_seconds":         dto.MetricType_HISTOGRAM,
		"hostlet_syncs_total":                   dto.MetricType_COUNTER,
		"hostlet_sync_errors_total":             dto.MetricType_COUNTER,
		"hostlet_pods":                          dto.MetricType_GAUGE,
		"hostlet_container_restarts":            dto.MetricType_COUNTER,
		"hostlet_source_revision_info":          dto.MetricType_GAUGE,
		"hostlet_source_up":                     dto.MetricType_GAUGE,
		"hostlet_rejected_manifests":            dto.MetricType_GAUGE,
		"hostlet_build_info":                    dto.MetricType_GAUGE,
		"go_goroutines":                         dto.MetricType_GAUGE,
		"process_resident_memory_bytes":         dto.MetricType_GAUGE,
		"hostlet_source_fetch_duration_seconds": dto.MetricType_HISTOGRAM,
		"hostlet_source_errors_total":           dto.MetricType_COUNTER,
	}
	m.SourceUpdate(sources.Update{Source: "fleet", Took: 30 * time.Millisecond})
	m.SourceUpdate(sources.Update{Source: "cmdb", Err: errors.New("500"), Took: 2 * time.Millisecond})
	mfs = scrape(t, h)
	for name, typ := range types {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("no %s", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("%s is a %s, want %s", name, mf.GetType(), typ)
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	want(t, mfs, "hostlet_build_info", map[string]string{"version": "v1.2.3", "commit": "abc123"}, 1)
	want(t, mfs, "hostlet_pods", map[string]string{"phase": "Running"}, 2)
	want(t, mfs, "hostlet_pods", map[string]string{"phase": "Succeeded"}, 1)
	want(t, mfs, "hostlet_pods", map[string]string{"phase": "Pending"}, 0)
	want(t, mfs, "hostlet_pods", map[string]string{"phase": "Failed"}, 0)
	want(t, mfs, "hostlet_container_restarts", map[string]string{"pod": "web", "container": "side"}, 2)
	want(t, mfs, "hostlet_container_restarts", map[string]string{"pod": "db", "container": "app"}, 1)
	want(t, mfs, "hostlet_source_revision_info", map[string]string{"source": "fleet", "revision": "3f2a9c1"}, 1)
	want(t, mfs, "hostlet_source_up", map[string]string{"source": "fleet"}, 1)
	want(t, mfs, "hostlet_source_up", map[string]string{"source": "cmdb"}, 0)
	want(t, mfs, "hostlet_rejected_manifests", nil, 1)
	want(t, mfs, "hostlet_source_errors_total", map[string]string{"source": "cmdb"}, 1)
	if _, ok := value(mfs, "hostlet_source_revision_info", map[string]string{"source": "cmdb"}); ok {
		t.Error("a revision for a source that never delivered one")
	}
	if h := mfs["hostlet_source_fetch_duration_seconds"].GetMetric(); len(h) != 2 {
		t.Errorf("fetch duration histograms %v, want one per source", h)
	}

	// Syncs: count, errors, and the histogram's count and sum.
	m.SyncDone(20*time.Millisecond, nil)
	m.SyncDone(40*time.Millisecond, errors.New("pod web: boom"))
	m.SyncDone(3*time.Second, nil)
	mfs = scrape(t, h)
	want(t, mfs, "hostlet_syncs_total", nil, 3)
	want(t, mfs, "hostlet_sync_errors_total", nil, 1)
	hist := mfs["hostlet_sync_duration_seconds"].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 3 || hist.GetSampleSum() < 3.059 || hist.GetSampleSum() > 3.061 {
		t.Errorf("sync histogram: count %d, sum %v; want 3 and 3.06", hist.GetSampleCount(), hist.GetSampleSum())
	}
	for _, b := range hist.GetBucket() {
		wantN := map[float64]uint64{.01: 0, .05: 2, 1: 2, 5: 3}[b.GetUpperBound()]
		if _, ok := map[float64]bool{.01: true, .05: true, 1: true, 5: true}[b.GetUpperBound()]; ok && b.GetCumulativeCount() != wantN {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), wantN)
		}
	}

	// The state moves: a pod added, a restart, a new revision, the source
	// back.
	st.mu.Lock()
	st.report.Pods = append(st.report.Pods, pod("new", hsync.PhaseRunning, 0))
	st.report.Pods[1].Containers[0].Restarts = 4
	st.sources[0].Revision = "9e8d7c6"
	st.sources[1].Error = ""
	st.sources[1].Revision = "sha256:0011"
	st.mu.Unlock()
	mfs = scrape(t, h)
	want(t, mfs, "hostlet_pods", map[string]string{"phase": "Running"}, 3)
	want(t, mfs, "hostlet_container_restarts", map[string]string{"pod": "db", "container": "app"}, 4)
	want(t, mfs, "hostlet_source_revision_info", map[string]string{"source": "fleet", "revision": "9e8d7c6"}, 1)
	if _, ok := value(mfs, "hostlet_source_revision_info", map[string]string{"revision": "3f2a9c1"}); ok {
		t.Error("the old revision is still reported")
	}
	want(t, mfs, "hostlet_source_up", map[string]string{"source": "cmdb"}, 1)
}

// TestOwnRegistry: two instances in one process do not collide (no
// global registry), and nothing is registered globally.
func TestOwnRegistry(t *testing.T) {
	st := &state{}
	a := metrics.New("a", "", st.Report, nil)
	b := metrics.New("b", "", st.Report, nil)
	a.SyncDone(time.Millisecond, nil)
	want(t, scrape(t, a.Handler()), "hostlet_syncs_total", nil, 1)
	want(t, scrape(t, b.Handler()), "hostlet_syncs_total", nil, 0)
	// No sources function: no source series, and no panic.
	if mf := scrape(t, b.Handler())["hostlet_source_up"]; mf != nil {
		t.Errorf("source series without sources: %v", mf)
	}
}
