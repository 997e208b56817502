package metrics_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestNotifications: the notification counters are read at scrape time,
// one series per target and counter.
func TestNotifications(t *testing.T) {
	counts := []metrics.NotificationCounts{{Target: "ops-slack"}, {Target: "notify[1]"}}
	m := metrics.New("v", "c", func() hsync.Report { return hsync.Report{} }, func() []sources.Status { return nil })
	m.Notifications(func() []metrics.NotificationCounts { return counts })
	mfs := scrape(t, m.Handler())
	for _, name := range []string{"hostlet_notifications_sent_total", "hostlet_notifications_failed_total", "hostlet_notifications_dropped_total"} {
		if mf := mfs[name]; mf == nil || mf.GetType() != dto.MetricType_COUNTER || mf.GetHelp() == "" {
			t.Fatalf("%s: %v, want a counter with help", name, mf)
		}
		want(t, mfs, name, map[string]string{"target": "ops-slack"}, 0)
	}
	counts = []metrics.NotificationCounts{{Target: "ops-slack", Sent: 5, Failed: 2, Dropped: 1}, {Target: "notify[1]", Sent: 9}}
	mfs = scrape(t, m.Handler())
	tests := []struct {
		name   string
		target string
		want   float64
	}{
		{name: "hostlet_notifications_sent_total", target: "ops-slack", want: 5},
		{name: "hostlet_notifications_failed_total", target: "ops-slack", want: 2},
		{name: "hostlet_notifications_dropped_total", target: "ops-slack", want: 1},
		{name: "hostlet_notifications_sent_total", target: "notify[1]", want: 9},
		{name: "hostlet_notifications_dropped_total", target: "notify[1]", want: 0},
	}
	for _, tt := range tests {
		want(t, mfs, tt.name, map[string]string{"target": tt.target}, tt.want)
	}
}
