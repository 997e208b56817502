// Package metrics exposes hostlet's Prometheus metrics on its own registry
// (no global state): sync duration, syncs and errors, pods by phase,
// container restarts, source fetch duration and errors, build info and the
// last applied revision per source, failures to read or write a state
// file under stateDir per file, engine events dropped by the reconciler,
// notifications sent, failed and dropped per target. Pod, source and
// notification figures are read at scrape time from what the reconciler,
// the merge and the notifier already hold, so a scrape costs no engine
// calls.
package metrics

import (
	"net/http"
	goruntime "runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// Metrics holds hostlet's collectors.
type Metrics struct {
	reg           *prometheus.Registry
	syncs         *syncStats
	fetchDuration *prometheus.HistogramVec
	fetchErrors   *prometheus.CounterVec
	buildDuration prometheus.Histogram
	buildFailures prometheus.Counter
}

// New registers every collector. report and sourceStates are read at
// scrape time.
func New(version, commit string, report func() hsync.Report, sourceStates func() []sources.Status) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		syncs: newSyncStats(),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hostlet_source_fetch_duration_seconds", Help: "Duration of a source read that produced an update.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"source"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hostlet_source_errors_total", Help: "Source reads that failed."}, []string{"source"}),
		buildDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hostlet_build_duration_seconds", Help: "Duration of an image build (failed ones included).",
			Buckets: []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 1800},
		}),
		buildFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "hostlet_build_failures_total", Help: "Image builds that failed."}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hostlet_build_info", Help: "hostlet's version; the value is 1.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": goruntime.Version()},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(m.syncs, m.fetchDuration, m.fetchErrors, m.buildDuration, m.buildFailures, buildInfo,
		&stateCollector{report: report, sources: sourceStates},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SyncDone records one sync.
func (m *Metrics) SyncDone(d time.Duration, err error) {
	m.syncs.observe(d, err)
}

// BuildDone records one image build.
func (m *Metrics) BuildDone(d time.Duration, err error) {
	m.buildDuration.Observe(d.Seconds())
	if err != nil {
		m.buildFailures.Inc()
	}
}

// SourceUpdate records one update from a source.
func (m *Metrics) SourceUpdate(u sources.Update) {
	if u.Took > 0 {
		m.fetchDuration.WithLabelValues(u.Source).Observe(u.Took.Seconds())
	}
	if u.Err != nil {
		m.fetchErrors.WithLabelValues(u.Source).Inc()
	}
}

// StateFiles exports the failures p counts, read at scrape time:
// hostlet_state_file_errors_total{file} (file relative to stateDir). Call
// it once.
func (m *Metrics) StateFiles(p *atomicfile.Problems) {
	m.reg.MustRegister(stateFileCollector{problems: p})
}

// EngineEventsDropped exports dropped, read at scrape time, as
// hostlet_engine_events_dropped_total: the engine events the reconciler
// dropped because its event queue was full (each drop triggers a full
// sync). Call it once.
func (m *Metrics) EngineEventsDropped(dropped func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hostlet_engine_events_dropped_total",
		Help: "Engine container events dropped because the reconciler's event queue was full; each drop triggers a sync that lists every container.",
	}, func() float64 { return float64(dropped()) }))
}

// UnprovenContainers exports, read at scrape time,
// hostlet_unproven_containers: the containers the last list found
// carrying this instance's labels without being proven hostlet's (its
// name is not the one hostlet gives those labels; left alone, never
// adopted or removed), and hostlet_unproven_container_events_dropped_total:
// the engine events of such containers dropped. Call it once.
func (m *Metrics) UnprovenContainers(listed func() int, events func() uint64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hostlet_unproven_containers",
		Help: "Containers carrying this instance's labels that hostlet cannot prove it made (the last list); left alone.",
	}, func() float64 { return float64(listed()) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hostlet_unproven_container_events_dropped_total",
		Help: "Engine events of containers carrying this instance's labels that hostlet cannot prove it made; dropped.",
	}, func() float64 { return float64(events()) }))
}

// PodFailures exports failures, read at scrape time, as
// hostlet_pod_failures_total{reason}: every failed apply of a pod, by the
// reason its status gives (ErrImagePull, EngineUnavailable, ...). Call it
// once.
func (m *Metrics) PodFailures(failures func() map[string]uint64) {
	m.reg.MustRegister(countsCollector{desc: podFailuresDesc, counts: failures})
}

var podFailuresDesc = prometheus.NewDesc("hostlet_pod_failures_total",
	"Failed applies of a pod (create, start, pull, remove), by the reason its status gives.", []string{"reason"}, nil)

// countsCollector exports a set of counters, one per label value, read at
// scrape time.
type countsCollector struct {
	desc   *prometheus.Desc
	counts func() map[string]uint64
}

func (c countsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c countsCollector) Collect(ch chan<- prometheus.Metric) {
	for label, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), label)
	}
}

var stateFileErrorsDesc = prometheus.NewDesc("hostlet_state_file_errors_total",
	"Failures to read (damaged, unreadable) or write (full disk, I/O error) a state file under stateDir.", []string{"file"}, nil)

// stateFileCollector reads the state file problems at scrape time.
type stateFileCollector struct{ problems *atomicfile.Problems }

func (c stateFileCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stateFileErrorsDesc }

func (c stateFileCollector) Collect(ch chan<- prometheus.Metric) {
	for file, n := range c.problems.Counts() {
		ch <- prometheus.MustNewConstMetric(stateFileErrorsDesc, prometheus.CounterValue, float64(n), file)
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	podsDesc     = prometheus.NewDesc("hostlet_pods", "Pods by phase.", []string{"phase"}, nil)
	restartsDesc = prometheus.NewDesc("hostlet_container_restarts", "Restarts of a container slot (crash, probe, recovery), surviving hostlet restarts.", []string{"pod", "container"}, nil)
	revisionDesc = prometheus.NewDesc("hostlet_source_revision_info", "The revision a source last delivered; the value is 1.", []string{"source", "revision"}, nil)
	sourceUpDesc = prometheus.NewDesc("hostlet_source_up", "1 when the source's last read succeeded.", []string{"source"}, nil)
	rejectedDesc = prometheus.NewDesc("hostlet_rejected_manifests", "Manifests rejected by validation.", nil, nil)
)

// stateCollector reads pods and sources at scrape time.
type stateCollector struct {
	report  func() hsync.Report
	sources func() []sources.Status
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- podsDesc
	ch <- restartsDesc
	ch <- revisionDesc
	ch <- sourceUpDesc
	ch <- rejectedDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.report()
	phases := map[string]int{hsync.PhasePending: 0, hsync.PhaseRunning: 0, hsync.PhaseFailed: 0, hsync.PhaseSucceeded: 0}
	for _, p := range rep.Pods {
		phases[p.Phase]++
		for _, ct := range p.Containers {
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(ct.Restarts), p.ID, ct.Name)
		}
	}
	for phase, n := range phases {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(n), phase)
	}
	ch <- prometheus.MustNewConstMetric(rejectedDesc, prometheus.GaugeValue, float64(len(rep.Rejected)))
	if c.sources == nil {
		return
	}
	for _, s := range c.sources() {
		up := 1.0
		if s.Error != "" {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, up, s.Name)
		if s.Revision != "" {
			ch <- prometheus.MustNewConstMetric(revisionDesc, prometheus.GaugeValue, 1, s.Name, s.Revision)
		}
	}
}
