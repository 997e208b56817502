// Package eventlog records what hostlet did and saw (create, start, stop,
// remove, restart, unhealthy, pull-failed, rejected, source-error) in a
// bounded ring buffer that the HTTP API serves and reporters follow. Event
// messages never hold env values. The ring is bounded by count and by
// bytes (MaxBytes), and every event's text is cut to MaxMessageBytes and
// MaxFieldBytes, so a source error quoting a huge file costs little.
package eventlog

import (
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/textcap"
)

// Event types.
const (
	Create      = "create"
	Start       = "start"
	Stop        = "stop"
	Remove      = "remove"
	Restart     = "restart"
	Unhealthy   = "unhealthy"
	PullFailed  = "pull-failed"
	Build       = "build"
	BuildFailed = "build-failed"
	Rejected    = "rejected"
	SourceError = "source-error"
	Failed      = "failed"
	Rollback    = "rollback"
	Recovered   = "recovered"
	Hold        = "hold"
	Release     = "release"
)

// Event is one thing that happened, as /events and etcd show it. Every
// event carries all six keys; a field that does not apply is "".
type Event struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Pod       string    `json:"pod"`
	Container string    `json:"container"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	// Seq numbers events in the order they were recorded, from 1.
	Seq uint64 `json:"-"`
}

// Log is a ring buffer of the most recent events: at most its size, and
// at most MaxBytes of them. The zero value is not usable; use NewLog.
type Log struct {
	mu    gosync.Mutex
	buf   []Event // a ring: n events from head
	head  int
	n     int
	bytes int // eventBytes of the n events
	seq   uint64
	clock clock.Clock
	subs  map[chan Event]struct{}
}

// NewLog returns a log keeping the last size events (and at most MaxBytes).
func NewLog(size int) *Log {
	return &Log{buf: make([]Event, max(size, 1)), clock: clock.Real{}, subs: map[chan Event]struct{}{}}
}

// WithClock makes the log date the events recorded without a time on c
// (nil: clock.Real) and returns it.
func (l *Log) WithClock(c clock.Clock) *Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock = clock.Or(c)
	return l
}

// Record adds an event, setting its time when unset and cutting its text
// to the bounds, drops the oldest events beyond the log's size or
// MaxBytes, and offers the event to every subscriber without blocking (a
// slow subscriber misses events, it never slows the recorder).
func (l *Log) Record(e Event) {
	e.Type = textcap.Truncate(e.Type, MaxFieldBytes)
	e.Pod = textcap.Truncate(e.Pod, MaxFieldBytes)
	e.Container = textcap.Truncate(e.Container, MaxFieldBytes)
	e.Reason = textcap.Truncate(e.Reason, MaxFieldBytes)
	e.Message = textcap.Truncate(e.Message, MaxMessageBytes)
	size := eventBytes(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = l.clock.Now()
	}
	l.seq++
	e.Seq = l.seq
	for l.n > 0 && (l.n == len(l.buf) || l.bytes+size > MaxBytes) {
		l.bytes -= eventBytes(l.buf[l.head])
		l.buf[l.head] = Event{}
		l.head = (l.head + 1) % len(l.buf)
		l.n--
	}
	l.buf[(l.head+l.n)%len(l.buf)] = e
	l.n++
	l.bytes += size
	for ch := range l.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// List returns the buffered events, oldest first.
func (l *Log) List() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, 0, l.n)
	for i := range l.n {
		out = append(out, l.buf[(l.head+i)%len(l.buf)])
	}
	return out
}

// Subscribe returns a channel receiving every event recorded from now on,
// and a function that ends the subscription.
func (l *Log) Subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, buffer)
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.subs, ch)
		l.mu.Unlock()
	}
}

// Bounds on what the log keeps.
const (
	// MaxMessageBytes bounds an event's message (a source's whole error
	// text fits: textcap.ErrorTextBytes).
	MaxMessageBytes = 4 << 10
	// MaxFieldBytes bounds an event's type, pod, container and reason.
	MaxFieldBytes = 256
	// MaxBytes bounds the events the log keeps, counted by eventBytes; the
	// oldest are dropped first.
	MaxBytes = 1 << 20
)

// eventOverhead is what an event costs besides its text: its time, seq
// and string headers.
const eventOverhead = 128

// eventBytes is what e counts against MaxBytes.
func eventBytes(e Event) int {
	return eventOverhead + len(e.Type) + len(e.Pod) + len(e.Container) + len(e.Reason) + len(e.Message)
}
