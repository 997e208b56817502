package clock

import (
	"context"
	gosync "sync"
	"time"
)

// Fake is a Clock for tests: its time moves only when Advance is called,
// which fires every timer and ticker that falls due, in the order of their
// times (those due at the same time in the order they were set), each
// sending the time it was due. It is safe for concurrent use.
//
// A timer or ticker sends without ever blocking (on a channel of one, as
// time.Timer's did before Go 1.23): a ticker whose receiver has not taken
// the last tick drops the next, and Stop and Reset drain the channel, so no
// stale value is received after they return. A goroutine that must be
// waiting on a timer before the test advances the clock is waited for with
// WaitForTimers.
type Fake struct {
	mu  gosync.Mutex
	now time.Time
	// active are the timers not yet fired or stopped and the tickers not
	// stopped.
	active []*fakeTimer
	seq    uint64
	// changed is closed and replaced whenever the active set changes.
	changed chan struct{}
}

// NewFake returns a fake clock at start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since implements Clock.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer implements Clock; a d of zero or less fires at once.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t, d, 0)
	return t
}

// NewTicker implements Clock. Like time.NewTicker, it panics when d is
// not more than zero.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t, d, d)
	return fakeTicker{t}
}

// Advance moves the clock d forward, firing what falls due on the way.
// A d of zero or less fires nothing new and leaves the time as it is.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		return
	}
	end := f.now.Add(d)
	for {
		t := f.nextLocked(end)
		if t == nil {
			break
		}
		f.now = t.when
		t.send(t.when)
		if t.period > 0 {
			t.when = t.when.Add(t.period)
		} else {
			f.removeLocked(t)
		}
	}
	f.now = end
}

// Timers returns the number of timers waiting to fire and tickers running.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.active)
}

// WaitForTimers waits until at least n timers are waiting to fire or
// tickers running (a goroutine under test has reached its wait), or ctx
// ends.
func (f *Fake) WaitForTimers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, changed := len(f.active), f.changed
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// nextLocked returns the active timer due first, at end at the latest,
// or nil.
func (f *Fake) nextLocked(end time.Time) *fakeTimer {
	var next *fakeTimer
	for _, t := range f.active {
		if t.when.After(end) {
			continue
		}
		if next == nil || t.when.Before(next.when) || (t.when.Equal(next.when) && t.seq < next.seq) {
			next = t
		}
	}
	return next
}

// setLocked (re)arms t to fire after d, every period when period > 0; a
// timer due now fires at once.
func (f *Fake) setLocked(t *fakeTimer, d, period time.Duration) {
	t.drain()
	f.seq++
	t.seq, t.when, t.period = f.seq, f.now.Add(d), period
	if period == 0 && d <= 0 {
		f.removeLocked(t)
		t.send(f.now)
		return
	}
	if !t.active {
		t.active = true
		f.active = append(f.active, t)
		f.changedLocked()
	}
}

// removeLocked makes t inactive; it reports whether t was active.
func (f *Fake) removeLocked(t *fakeTimer) bool {
	if !t.active {
		return false
	}
	t.active = false
	for i, a := range f.active {
		if a == t {
			f.active = append(f.active[:i], f.active[i+1:]...)
			break
		}
	}
	f.changedLocked()
	return true
}

func (f *Fake) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// fakeTimer is a Fake's timer, and the state of its tickers. Its fields
// other than f and c are guarded by f.mu.
type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	when   time.Time
	period time.Duration // 0 for a timer
	seq    uint64
	active bool
}

func (t *fakeTimer) send(now time.Time) {
	select {
	case t.c <- now:
	default:
	}
}

func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	return t.f.removeLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.f.setLocked(t, d, 0)
	return was
}

type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time { return k.t.c }
func (k fakeTicker) Stop()               { k.t.Stop() }

func (k fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	k.t.f.mu.Lock()
	defer k.t.f.mu.Unlock()
	k.t.f.setLocked(k.t, d, d)
}

var (
	_ Clock = Real{}
	_ Clock = (*Fake)(nil)
)
