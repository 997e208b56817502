package notify

import (
	"context"
	gosync "sync"
)

// queue is a target's bounded FIFO of notifications. push never waits:
// when the queue is full it drops the oldest notification (the newest say
// what is true now, e.g. a recovery after a failure).
type queue struct {
	mu   gosync.Mutex
	buf  []Notification // a ring: n notifications from head
	head int
	n    int
	// wake holds a token while the queue may hold notifications.
	wake chan struct{}
}

func newQueue(size int) *queue {
	return &queue{buf: make([]Notification, max(size, 1)), wake: make(chan struct{}, 1)}
}

// push appends n and reports whether it dropped the oldest notification
// to make room.
func (q *queue) push(n Notification) (dropped bool) {
	q.mu.Lock()
	if q.n == len(q.buf) {
		q.buf[q.head] = Notification{}
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		dropped = true
	}
	q.buf[(q.head+q.n)%len(q.buf)] = n
	q.n++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return dropped
}

// pop waits for the oldest notification and takes it; false once ctx
// has ended (what is left waiting is dropped, uncounted).
func (q *queue) pop(ctx context.Context) (Notification, bool) {
	for ctx.Err() == nil {
		q.mu.Lock()
		if q.n > 0 {
			n := q.buf[q.head]
			q.buf[q.head] = Notification{}
			q.head = (q.head + 1) % len(q.buf)
			q.n--
			q.mu.Unlock()
			return n, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return Notification{}, false
		case <-q.wake:
		}
	}
	return Notification{}, false
}

// len returns the number of notifications waiting.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
