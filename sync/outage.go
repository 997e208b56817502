package sync

import "time"

// The engine stops every container when it shuts down (Docker without
// live-restore) and starts those of policy always again when it comes
// back: exits and restarts that are the engine's, not the containers'.
// An outage is seen from the runtime's EventStreamBroke: its event stream
// broke and it does not answer a ping (sent each second until it does).
const (
	// outageBefore: the engine closes its API before it stops the
	// containers, but a die event can still race the stream's end.
	outageBefore = 10 * time.Second
	// outageAfter covers the engine coming back after its last
	// unanswered ping (the runtime pings each second) and starting the
	// containers of policy always as it restores them.
	outageAfter = 30 * time.Second
	// outageGap parts two outages: while the engine is away the runtime
	// tells so every second, so signs further apart are two outages.
	outageGap = 10 * time.Second
	// maxOutage bounds what one outage excuses: an engine upgrade or a
	// slow stop of many containers takes minutes, an engine away for
	// longer does not hide a crash loop forever (its restarts count
	// again past it).
	maxOutage = 15 * time.Minute
)

// engineOutage is the engine's latest time away: from its first
// EventStreamBroke to its last (zero when none was seen), excusing at
// most maxOutage of it.
type engineOutage struct {
	from, last time.Time
}

// broke records an EventStreamBroke at t.
func (o *engineOutage) broke(t time.Time) {
	if o.from.IsZero() || t.Sub(o.last) > outageGap || t.Before(o.from) {
		// A new outage (or the clock went back: start over).
		o.from, o.last = t, t
		return
	}
	if t.After(o.last) {
		o.last = t
	}
}

// covers reports whether t falls within the outage, margins included.
func (o engineOutage) covers(t time.Time) bool {
	end := o.last
	if cap := o.from.Add(maxOutage); end.After(cap) {
		end = cap
	}
	return !o.from.IsZero() && !t.IsZero() &&
		!t.Before(o.from.Add(-outageBefore)) && !t.After(end.Add(outageAfter))
}

// engineStoppedLocked reports whether container id of slot last stopped
// because the engine went down: its die event's time falls within the
// outage, or, when no die event of it came (the engine went down with
// its stream), the outage came after the container's last start
// (lastStart, zero when unknown) and the restart, at, falls within it.
// Such a restart is counted, but it is no crash. The caller holds mu.
func (s *Syncer) engineStoppedLocked(ps *podState, slot, id string, lastStart, at time.Time) bool {
	o := s.pods.outage
	if o.from.IsZero() {
		return false
	}
	if r := ps.runs[slot]; r.exitID == id && !r.exitTime.IsZero() {
		return o.covers(r.exitTime)
	}
	return (lastStart.IsZero() || o.last.After(lastStart)) && o.covers(at)
}
