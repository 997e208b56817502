package runtime

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/hostlet/hostlet/internal/clock"
)

// Events streams this instance's container events until ctx ends, then
// closes the channel. Only events of containers proven hostlet's (see
// Proven) are delivered; the others are counted (UnprovenEvents) and
// dropped. When the engine's stream breaks, the error is logged, the
// engine is pinged (EventStreamBroke sent each second it does not answer:
// it is away, see awaitEngine), and Events subscribes again with backoff
// (doubling from 100 ms up to 5 s), asking the engine to replay what happened since the last event received
// (the engine keeps a short buffer of recent events), so a reconnect loses
// nothing the engine still remembers. A consumer that stops reading blocks
// the stream (and the engine drops what a stalled subscriber does not
// take): it must keep reading until ctx ends, handing long work to another
// goroutine (the Syncer queues events on one of its own). The channel is
// closed only once every goroutine Events started has returned, so a
// consumer that reads until it is closed has joined them.
func (d *Docker) Events(ctx context.Context) <-chan Event {
	out := make(chan Event, 16)
	go d.watchEvents(ctx, out)
	return out
}

func (d *Docker) watchEvents(ctx context.Context, out chan<- Event) {
	defer close(out)
	f := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("label", LabelInstance+"="+d.instance),
	)
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	var resume eventCursor // replay from here on reconnect
	for {
		started := d.clock.Now()
		if resume.since.IsZero() {
			resume.since = started
		}
		delivered, err := d.streamEvents(ctx, f, resume.since, out, &resume)
		if ctx.Err() != nil {
			return
		}
		if delivered || d.clock.Since(started) > 10*time.Second {
			backoff = minBackoff
		}
		d.log.Warn("docker event stream broke; reconnecting", "error", err, "retry_in", backoff)
		if !d.awaitEngine(ctx, out) {
			return
		}
		if !clock.Sleep(ctx, d.clock, backoff) {
			return
		}
		backoff = min(2*backoff, d.eventBackoffMax)
	}
}

// streamEvents runs one subscription until it fails or ctx ends, moving
// resume past every event it delivers. It reports whether it delivered any.
func (d *Docker) streamEvents(ctx context.Context, f filters.Args, since time.Time, out chan<- Event, resume *eventCursor) (bool, error) {
	// Cancelling sctx ends the client's stream goroutine, which sends at
	// most one error (errs has room for it) and closes errs last: reading
	// errs until it is closed joins that goroutine.
	sctx, cancel := context.WithCancel(ctx)
	msgs, errs := d.cli.Events(sctx, events.ListOptions{
		Filters: f,
		Since:   since.UTC().Format(time.RFC3339Nano),
	})
	defer func() {
		cancel()
		for range errs {
		}
	}()
	delivered := false
	for {
		select {
		case m := <-msgs:
			ev := toEvent(m)
			if !d.provenEvent(ev) {
				// Moved past all the same: it is not replayed.
				resume.after(ev.Time)
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return delivered, ctx.Err()
			}
			delivered = true
			resume.after(ev.Time)
		case err := <-errs:
			if err == nil {
				err = errors.New("event stream closed")
			}
			return delivered, translate(err)
		case <-ctx.Done():
			return delivered, ctx.Err()
		}
	}
}

// pingWithin: an engine that does not answer a ping this soon, after its
// stream broke, is away (EventStreamBroke). A socket systemd holds
// accepts the connection while the engine restarts and answers nothing.
const pingWithin = time.Second

// awaitEngine pings the engine after its stream broke. While it does not
// answer, it sends EventStreamBroke, once a second: the engine is away,
// and the exits and restarts around it are its doing. A stream that
// closed while the engine answers is no outage. It reports false when ctx
// ends.
func (d *Docker) awaitEngine(ctx context.Context, out chan<- Event) bool {
	for {
		pctx, cancel := context.WithTimeout(ctx, pingWithin)
		_, err := d.cli.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			return true
		}
		select {
		case out <- Event{Action: EventStreamBroke, Time: d.clock.Now()}:
		case <-ctx.Done():
			return false
		}
		if !clock.Sleep(ctx, d.clock, pingWithin) {
			return false
		}
	}
}

// eventCursor is where a reconnect resumes the engine's events: just
// after the latest event seen (the engine's since is inclusive).
type eventCursor struct {
	since, latest time.Time
}

// after moves the cursor past an event at t, never back: Podman's events,
// written by several processes, can come out of time order, and resuming
// from an earlier one would deliver the later ones again (a start counted
// twice).
func (c *eventCursor) after(t time.Time) {
	if c.latest.IsZero() || t.After(c.latest) {
		c.latest = t
		c.since = t.Add(time.Nanosecond)
	}
}

// provenEvent reports whether ev is an event of a container proven this
// instance's (see Proven): the event's attributes carry the container's
// labels and its name. Others are counted and dropped (the first of each
// container logged): a builder's step container that carries a pod's
// labels must not pass for that pod's crash or start.
func (d *Docker) provenEvent(ev Event) bool {
	// An event names no image ID: a container under a chosen name is
	// proven by the list that proved it, or by its create.
	if d.owner().Proves(ev.Labels[attrName], "", ev.Labels) || d.named.has(ev.ContainerID) && ev.Labels[attrName] == ev.Labels[LabelName] {
		return true
	}
	if d.unproven.droppedEvent(ev.ContainerID) {
		d.log.Info("dropping the engine events of a container that carries this instance's labels but is not one hostlet made",
			"id", ev.ContainerID, "name", ev.Labels[attrName], "action", ev.Action,
			"pod", ev.Labels[LabelPod], "container", ev.Labels[LabelContainer])
	}
	return false
}

// attrName is the attribute of a container event that holds the
// container's name (the engine sets it after the labels: a label of that
// key does not show through).
const attrName = "name"

func toEvent(m events.Message) Event {
	ev := Event{
		Action:      string(m.Action),
		ContainerID: m.Actor.ID,
		Labels:      m.Actor.Attributes,
		Time:        time.Unix(0, m.TimeNano),
	}
	if m.TimeNano == 0 {
		ev.Time = time.Unix(m.Time, 0)
	}
	if ev.Labels == nil {
		ev.Labels = map[string]string{}
	}
	if code, ok := m.Actor.Attributes["exitCode"]; ok {
		if n, err := strconv.Atoi(code); err == nil {
			ev.ExitCode = n
		}
	}
	return ev
}
