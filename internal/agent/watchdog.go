package agent

import (
	"fmt"
	"time"

	"github.com/hostlet/hostlet/api"
)

// MinSyncDeadline is the least time a sync pass may run before the
// watchdog calls it overdue: pulls and builds have their own timeouts
// (sync.pullTimeout, sync.buildTimeout) and run beside the pass, so a
// pass is seconds long; minutes mean it is stuck.
const MinSyncDeadline = 5 * time.Minute

// SyncDeadline is how long a sync pass may run: max(MinSyncDeadline, 10
// sync intervals).
func SyncDeadline(interval time.Duration) time.Duration {
	return max(MinSyncDeadline, 10*interval)
}

// overdue is the agent's watchdog, read by /healthz and the status
// document: a sync pass running past SyncDeadline, and the sources whose
// update's checks run past the merge's deadline (sources.Merger.Overdue).
// It only reads the start of the work it watches, so it answers however
// stuck that work is.
func (a *agent) overdue() api.Overdue {
	var o api.Overdue
	if start := a.syncer.Running(); !start.IsZero() {
		deadline := SyncDeadline(a.cfg.Sync.Interval)
		if took := a.clock.Since(start); took > deadline {
			o.Sync = fmt.Sprintf("the sync pass started at %s has run for %s, past its deadline of %s", start.UTC().Format(time.RFC3339), took.Round(time.Second), deadline)
		}
	}
	o.Sources = a.merger.Overdue()
	return o
}
