package metrics

import (
	"errors"
	"slices"
	gosync "sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gatherSyncs scrapes s once: the histogram's count, sum and buckets, the
// syncs counter and the errors counter.
func gatherSyncs(t *testing.T, s *syncStats) (h *dto.Histogram, syncs, errs float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		m := f.GetMetric()[0]
		switch f.GetName() {
		case "hostlet_sync_duration_seconds":
			h = m.GetHistogram()
		case "hostlet_syncs_total":
			syncs = m.GetCounter().GetValue()
		case "hostlet_sync_errors_total":
			errs = m.GetCounter().GetValue()
		}
	}
	return h, syncs, errs
}

// TestSyncMetricsReadAtOneInstant: however a scrape falls between the
// syncs recorded meanwhile, it shows as many syncs in the counter as in
// the histogram, and no more errors than syncs.
func TestSyncMetricsReadAtOneInstant(t *testing.T) {
	s := newSyncStats()
	stop := make(chan struct{})
	var wg gosync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%3 == 0 {
				err = errors.New("failed")
			}
			s.observe(time.Duration(i%100)*time.Millisecond, err)
		}
	})
	for range 300 {
		h, syncs, errs := gatherSyncs(t, s)
		if float64(h.GetSampleCount()) != syncs || errs > syncs {
			t.Fatalf("one scrape: histogram count %d, hostlet_syncs_total %v, errors %v", h.GetSampleCount(), syncs, errs)
		}
	}
	close(stop)
	wg.Wait()
}

// TestSyncHistogramAsPrometheusBuckets: the buckets, count and sum are
// those of a prometheus.Histogram with the same bounds fed the same
// durations, bounds themselves included.
func TestSyncHistogramAsPrometheusBuckets(t *testing.T) {
	s := newSyncStats()
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: syncBuckets})
	var durations []time.Duration
	for _, b := range syncBuckets {
		d := time.Duration(b * float64(time.Second))
		durations = append(durations, d, d+time.Microsecond, d-time.Microsecond)
	}
	durations = append(durations, 0, 2*time.Minute)
	for _, d := range durations {
		s.observe(d, nil)
		ref.Observe(d.Seconds())
	}
	got, _, _ := gatherSyncs(t, s)
	var want dto.Metric
	if err := ref.Write(&want); err != nil {
		t.Fatal(err)
	}
	w := want.GetHistogram()
	if got.GetSampleCount() != w.GetSampleCount() || got.GetSampleSum() != w.GetSampleSum() {
		t.Errorf("count %d sum %v, want %d %v", got.GetSampleCount(), got.GetSampleSum(), w.GetSampleCount(), w.GetSampleSum())
	}
	cum := func(h *dto.Histogram) []uint64 {
		var out []uint64
		for _, b := range h.GetBucket() {
			out = append(out, b.GetCumulativeCount())
		}
		return out
	}
	if !slices.Equal(cum(got), cum(w)) {
		t.Errorf("cumulative buckets %v, want %v", cum(got), cum(w))
	}
}
