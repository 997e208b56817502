package notify

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
)

// sender delivers one notification to a target, once.
type sender interface {
	send(ctx context.Context, n Notification) error
}

// target is one configured target: its filter, its queue and its counts.
type target struct {
	name string
	// endpoint names the target in logs without its secrets: the scheme,
	// and the host of a webhook (a chat URL's host may be a token).
	endpoint string
	// events are the event names sent; nil: all.
	events map[string]bool
	sender sender
	queue  *queue

	sent, failed, dropped atomic.Uint64
	// dropping is set by the first drop since the last delivery, so a
	// target that is down logs that it drops once, not per notification.
	dropping atomic.Bool
}

// wants reports whether the target is sent event name.
func (t *target) wants(name string) bool {
	return t.events == nil || t.events[name]
}

// enqueue queues n without waiting, dropping the oldest notification when
// the queue is full.
func (t *target) enqueue(n Notification, log *slog.Logger) {
	if !t.queue.push(n) {
		return
	}
	t.dropped.Add(1)
	if !t.dropping.Swap(true) {
		log.Warn("notification target's queue is full: dropping the oldest notifications", "target", t.name, "endpoint", t.endpoint, "queue", len(t.queue.buf))
	}
}

// run delivers the queued notifications in order until ctx ends.
func (t *target) run(ctx context.Context, r Retry, clk clock.Clock, log *slog.Logger) {
	for {
		n, ok := t.queue.pop(ctx)
		if !ok {
			return
		}
		t.deliver(ctx, n, r, clk, log)
	}
}

// deliver sends n, retrying with backoff up to r.Attempts times; it counts
// n as sent or failed, and as neither when ctx ends first.
func (t *target) deliver(ctx context.Context, n Notification, r Retry, clk clock.Clock, log *slog.Logger) {
	delay := r.Initial
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, r.Timeout)
		err := t.sender.send(actx, n)
		cancel()
		if err == nil {
			t.sent.Add(1)
			if t.dropping.Swap(false) {
				log.Info("notification target delivers again", "target", t.name, "endpoint", t.endpoint)
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt >= r.Attempts {
			t.failed.Add(1)
			log.Warn("notification not delivered", "target", t.name, "endpoint", t.endpoint, "event", n.Event, "pod", n.Pod, "attempts", attempt, "error", err)
			return
		}
		log.Debug("notification failed, retrying", "target", t.name, "endpoint", t.endpoint, "event", n.Event, "attempt", attempt, "in", delay, "error", err)
		if !clock.Sleep(ctx, clk, delay) {
			return
		}
		delay = min(2*delay, r.Max)
	}
}

// Retry is how a target retries a notification; a zero field takes its
// default.
type Retry struct {
	// Attempts is how many times a notification is sent before it counts
	// as failed (default 5).
	Attempts int
	// Initial is the wait after the first failed attempt (default 1 s);
	// each wait doubles, up to Max (default 60 s).
	Initial, Max time.Duration
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
}

// withDefaults fills the zero fields.
func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.Initial <= 0 {
		r.Initial = time.Second
	}
	if r.Max <= 0 {
		r.Max = time.Minute
	}
	r.Max = max(r.Max, r.Initial)
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Second
	}
	return r
}
