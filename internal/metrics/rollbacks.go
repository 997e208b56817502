package metrics

import "github.com/prometheus/client_golang/prometheus"

var rollbacksDesc = prometheus.NewDesc("hostlet_rollbacks_total",
	"Updates rolled back to the pod's last ready version (the new version crashed, failed to start, was unhealthy or not ready within its deadline), by pod.", []string{"pod"}, nil)

// Rollbacks exports rollbacks, read at scrape time, as
// hostlet_rollbacks_total{pod}. Call it once.
func (m *Metrics) Rollbacks(rollbacks func() map[string]uint64) {
	m.reg.MustRegister(countsCollector{desc: rollbacksDesc, counts: rollbacks})
}
