// Package clock is the one way hostlet reads time: the current time, how
// long since, and the timers and tickers its loops wait on (the syncer's
// interval and backoff, probe periods, source polling, the reporter's
// interval and leases, the API's status time). Every component takes a
// Clock in its options (nil means Real); the agent makes one Real and
// passes it everywhere, and tests pass a Fake and advance it by hand
// instead of sleeping. The model is tailscale's tstime.Clock.
//
// A context deadline (context.WithTimeout) is not a reading of time but a
// bound on an engine, network or disk call, enforced by the runtime and
// the call itself: such deadlines, and a connection's read deadline, stay
// on the real clock, and a Fake does not move them. Only what hostlet
// decides by time (when to poll, retry, probe or write; what time a status
// or event shows) goes through a Clock.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers and tickers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once,
	// after d.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on its channel every
	// d (d must be more than zero); ticks a slow receiver misses are
	// dropped.
	NewTicker(d time.Duration) Ticker
	// Since returns the time passed since t.
	Since(t time.Time) time.Duration
}

// Timer is a time.Timer behind an interface. As with time.Timer (Go 1.23
// and later), no stale value is received after Stop or Reset returns.
type Timer interface {
	C() <-chan time.Time
	// Stop stops the timer; it reports whether the timer was active.
	Stop() bool
	// Reset makes the timer fire after d; it reports whether the timer
	// was active.
	Reset(d time.Duration) bool
}

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	// Reset stops the ticker and makes it tick every d from now.
	Reset(d time.Duration)
}

// Or returns c, or Real when c is nil: what a component does with the
// Clock of its options.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Real is the system clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// Since implements Clock.
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer implements Clock.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker implements Clock.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time   { return t.t.C }
func (t realTicker) Stop()                 { t.t.Stop() }
func (t realTicker) Reset(d time.Duration) { t.t.Reset(d) }

// Sleep waits d on c, or until ctx ends; it reports whether d passed. A d
// of zero or less returns at once, true unless ctx has ended.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := Or(c).NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
