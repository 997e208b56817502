package agent

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/internal/notify"
)

// buildNotifier makes the notifier of the notify: targets (none: nil) and
// exports its counts in the metrics (built before it). A bad target (an
// unknown scheme, an unreadable urlFile or secretFile) stops hostlet at
// start, the error naming the key.
func (a *agent) buildNotifier() error {
	if len(a.cfg.Notify) == 0 {
		return nil
	}
	n, err := notify.New(a.cfg.Notify, notify.Options{
		Hostname: a.cfg.Hostname, Version: a.opts.Version, Revision: a.podRevision,
		Clock: a.clock, Log: a.log.With("component", "notify"),
	})
	if err != nil {
		if a.cfg.File == "" {
			return fmt.Errorf("config: %w", err)
		}
		return fmt.Errorf("config %s: %w", a.cfg.File, err)
	}
	a.notifier = n
	a.met.Notifications(func() []metrics.NotificationCounts {
		stats := n.Stats()
		out := make([]metrics.NotificationCounts, len(stats))
		for i, s := range stats {
			out[i] = metrics.NotificationCounts{Target: s.Target, Sent: s.Sent, Failed: s.Failed, Dropped: s.Dropped}
		}
		return out
	})
	return nil
}

// podRevision is the revision the syncer reports for pod id, "" for a pod
// it does not report.
func (a *agent) podRevision(id string) string {
	for _, p := range a.syncer.Report().Pods {
		if p.ID == id {
			return p.Revision
		}
	}
	return ""
}

// startNotifier runs the notifier (if any; not with Once) on wg until ctx
// ends, and returns once it follows the events log, so that no event
// recorded after it is missed.
func (a *agent) startNotifier(ctx context.Context, wg *gosync.WaitGroup) {
	if a.notifier == nil || a.opts.Once {
		return
	}
	wg.Go(func() { a.notifier.Run(ctx, a.ev) })
	select {
	case <-a.notifier.Ready():
	case <-ctx.Done():
	}
}
