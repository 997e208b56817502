package sync

import (
	"context"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// eventQueueSize bounds the engine events waiting for the sync loop, as
// kubelet's PLEG bounds its channel (1000 there too). A sync that applies
// 200 two-container pods makes about 800 container events.
const eventQueueSize = 1000

// pumpEvents reads the engine's events on a goroutine of its own and queues
// them for the sync loop, which reads the returned channel. The reader
// never waits for the loop: a sync may run for minutes, and an engine
// stream that is not read stalls (the engine drops what a slow subscriber
// does not take). When the queue is full, the event is dropped, counted
// (EventsDropped, hostlet_engine_events_dropped_total) and a sync is
// triggered: every sync lists all containers, so it sees the state the
// dropped event announced (a relist, in PLEG's terms). What only the event
// carried is lost, as with kubelet's discarded PLEG events: a crash the
// engine restarted by policy in the meantime is neither counted nor
// logged as one.
//
// The goroutine returns once in is closed (the EventSource closes it when
// ctx ends); it closes the queue and then done.
func (s *Syncer) pumpEvents(ctx context.Context, in <-chan hruntime.Event) (queue <-chan hruntime.Event, done <-chan struct{}) {
	q := make(chan hruntime.Event, eventQueueSize)
	d := make(chan struct{})
	go func() {
		defer close(d)
		defer close(q)
		overflowing := false
		for e := range in {
			if ctx.Err() != nil {
				// Stopping: nobody reads the queue any more; read in
				// until the source closes it.
				continue
			}
			if len(q) == 0 {
				// The loop has caught up: warn again at the next drop.
				overflowing = false
			}
			select {
			case q <- e:
			default:
				s.work.eventsDropped.Add(1)
				if !overflowing {
					overflowing = true
					s.log.Warn("engine event queue full; dropping events and syncing everything again", "queue", eventQueueSize)
				}
				s.Trigger()
			}
		}
	}()
	return q, d
}

// EventsDropped is the number of engine events dropped because the sync
// loop's event queue was full; each drop triggered a full sync.
func (s *Syncer) EventsDropped() uint64 { return s.work.eventsDropped.Load() }
