package metrics

import (
	"slices"
	gosync "sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// syncBuckets are hostlet_sync_duration_seconds's upper bounds.
var syncBuckets = []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60}

// syncStats are the sync metrics, kept under one lock so that a scrape
// shows them at one instant: hostlet_syncs_total always equals the count
// of hostlet_sync_duration_seconds, and hostlet_sync_errors_total never
// exceeds it (three collectors of their own are read one after the
// other, with a sync recorded in between).
type syncStats struct {
	mu     gosync.Mutex
	count  uint64
	errors uint64
	sum    float64
	// inBucket counts the syncs by the first bucket that holds them
	// (len(syncBuckets): only +Inf).
	inBucket []uint64

	durationDesc, syncsDesc, errorsDesc *prometheus.Desc
}

func newSyncStats() *syncStats {
	return &syncStats{
		inBucket:     make([]uint64, len(syncBuckets)+1),
		durationDesc: prometheus.NewDesc("hostlet_sync_duration_seconds", "Duration of a sync (list, plan, apply).", nil, nil),
		syncsDesc:    prometheus.NewDesc("hostlet_syncs_total", "Syncs run.", nil, nil),
		errorsDesc:   prometheus.NewDesc("hostlet_sync_errors_total", "Syncs that ended with an error.", nil, nil),
	}
}

func (s *syncStats) observe(d time.Duration, err error) {
	v := d.Seconds()
	i, _ := slices.BinarySearch(syncBuckets, v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.sum += v
	s.inBucket[i]++
	if err != nil {
		s.errors++
	}
}

// Describe implements prometheus.Collector.
func (s *syncStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.durationDesc
	ch <- s.syncsDesc
	ch <- s.errorsDesc
}

// Collect implements prometheus.Collector: the three metrics as read at
// one instant.
func (s *syncStats) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	count, errs, sum := s.count, s.errors, s.sum
	cumulative := make(map[float64]uint64, len(syncBuckets))
	var running uint64
	for i, le := range syncBuckets {
		running += s.inBucket[i]
		cumulative[le] = running
	}
	s.mu.Unlock()
	ch <- prometheus.MustNewConstHistogram(s.durationDesc, count, sum, cumulative)
	ch <- prometheus.MustNewConstMetric(s.syncsDesc, prometheus.CounterValue, float64(count))
	ch <- prometheus.MustNewConstMetric(s.errorsDesc, prometheus.CounterValue, float64(errs))
}
