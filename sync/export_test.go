package sync

import (
	"context"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// EventQueueSize is eventQueueSize, for the tests of package sync_test.
const EventQueueSize = eventQueueSize

// HandleEvent is handleEvent, for tests that feed engine events by hand
// (a fake clock, SyncOnce: no Run loop reads them).
func (s *Syncer) HandleEvent(ctx context.Context, e hruntime.Event) bool {
	return s.handleEvent(ctx, e)
}

// OnUnhealthy is onUnhealthy (a liveness probe's failure), for tests.
func (s *Syncer) OnUnhealthy(ctx context.Context, pod, slot, id string) {
	s.onUnhealthy(ctx, pod, slot, id, "", "probe failed", 0)
}

// OnUnhealthyAt is onUnhealthy of container id at the pod's address ip,
// with grace, for tests.
func (s *Syncer) OnUnhealthyAt(ctx context.Context, pod, slot, id, ip string, grace time.Duration) {
	s.onUnhealthy(ctx, pod, slot, id, ip, "liveness probe: failed", grace)
}

// DrainEvents is drainEvents, and MaxDrainedEvents its bound.
func (s *Syncer) DrainEvents(ctx context.Context, evs <-chan hruntime.Event) (<-chan hruntime.Event, bool) {
	return s.drainEvents(ctx, evs)
}

const MaxDrainedEvents = maxDrainedEvents
