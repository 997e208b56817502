// Package events records what hostlet did and saw (create, start, stop,
// remove, restart, unhealthy, pull-failed, rejected, source-error) in a
// bounded ring buffer that the HTTP API serves and reporters follow. Event
// messages never hold env values.
package events

import (
	gosync "sync"
	"time"
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
	Rejected    = "rejected"
	SourceError = "source-error"
	Failed      = "failed"
)

// Event is one thing that happened, as /events and etcd show it.
type Event struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Pod       string    `json:"pod,omitempty"`
	Container string    `json:"container,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	// Seq numbers events in the order they were recorded, from 1.
	Seq uint64 `json:"-"`
}

// Log is a ring buffer of the most recent events. The zero value is not
// usable; use NewLog.
type Log struct {
	mu   gosync.Mutex
	buf  []Event
	next int
	full bool
	seq  uint64
	now  func() time.Time
	subs map[chan Event]struct{}
}

// NewLog returns a log keeping the last size events.
func NewLog(size int) *Log {
	return &Log{buf: make([]Event, max(size, 1)), now: time.Now, subs: map[chan Event]struct{}{}}
}

// Record adds an event, setting its time when unset, and offers it to every
// subscriber without blocking (a slow subscriber misses events, it never
// slows the recorder).
func (l *Log) Record(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	l.seq++
	e.Seq = l.seq
	l.buf[l.next] = e
	l.next = (l.next + 1) % len(l.buf)
	if l.next == 0 {
		l.full = true
	}
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
	var out []Event
	if l.full {
		out = append(out, l.buf[l.next:]...)
	}
	return append(out, l.buf[:l.next]...)
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
