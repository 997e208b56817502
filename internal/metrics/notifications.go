package metrics

import "github.com/prometheus/client_golang/prometheus"

// NotificationCounts is what one notification target did since hostlet
// started (internal/notify's Stat, without this package importing it).
type NotificationCounts struct {
	Target                string
	Sent, Failed, Dropped uint64
}

// Notifications exports counts, read at scrape time, as
// hostlet_notifications_sent_total{target},
// hostlet_notifications_failed_total{target} and
// hostlet_notifications_dropped_total{target}. Call it once.
func (m *Metrics) Notifications(counts func() []NotificationCounts) {
	m.reg.MustRegister(notificationsCollector{counts: counts})
}

var (
	notificationsSentDesc = prometheus.NewDesc("hostlet_notifications_sent_total",
		"Notifications a target accepted.", []string{"target"}, nil)
	notificationsFailedDesc = prometheus.NewDesc("hostlet_notifications_failed_total",
		"Notifications given up after every attempt to send them to a target failed.", []string{"target"}, nil)
	notificationsDroppedDesc = prometheus.NewDesc("hostlet_notifications_dropped_total",
		"Notifications dropped, the oldest first, because a target's queue was full.", []string{"target"}, nil)
)

// notificationsCollector reads the notification targets' counts at
// scrape time.
type notificationsCollector struct {
	counts func() []NotificationCounts
}

func (c notificationsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- notificationsSentDesc
	ch <- notificationsFailedDesc
	ch <- notificationsDroppedDesc
}

func (c notificationsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(notificationsSentDesc, prometheus.CounterValue, float64(n.Sent), n.Target)
		ch <- prometheus.MustNewConstMetric(notificationsFailedDesc, prometheus.CounterValue, float64(n.Failed), n.Target)
		ch <- prometheus.MustNewConstMetric(notificationsDroppedDesc, prometheus.CounterValue, float64(n.Dropped), n.Target)
	}
}
