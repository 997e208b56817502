package sync

import (
	"testing"
	"time"
)

// An outage runs from the stream's first break to its last (breaks a
// minute apart or less), with margins for the engine's own stops before
// and its restarts after; an earlier outage is forgotten by a later one.
func TestEngineOutageCoversItsBreaksAndMargins(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	var o engineOutage
	if o.covers(t0) {
		t.Fatal("no break seen: covers a time")
	}
	for _, d := range []time.Duration{0, 5 * time.Second, 10 * time.Second} {
		o.broke(t0.Add(d))
	}
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{
		{-outageBefore - time.Second, false},
		{-outageBefore, true},
		{7 * time.Second, true},
		{10*time.Second + outageAfter, true},
		{10*time.Second + outageAfter + time.Second, false},
	} {
		if got := o.covers(t0.Add(tc.at)); got != tc.want {
			t.Errorf("covers(t0%+v) = %v, want %v", tc.at, got, tc.want)
		}
	}
	later := t0.Add(10*time.Second + outageGap + time.Second)
	o.broke(later)
	if o.covers(t0.Add(5*time.Second)) || !o.covers(later) {
		t.Errorf("after a break more than %s later: outage %v..%v, want it to start anew", outageGap, o.from, o.last)
	}
	if !o.covers(later.Add(-outageBefore)) || o.covers(time.Time{}) {
		t.Error("a later outage: margins wrong, or the zero time covered")
	}
}

// An engine away for long excuses at most maxOutage: restarts past it
// count as crashes again; signs of it more than outageGap apart are two
// outages; a clock gone back starts a new outage rather than stretching
// the old one.
func TestEngineOutageIsBounded(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	var o engineOutage
	for d := time.Duration(0); d <= time.Hour; d += time.Second {
		o.broke(t0.Add(d))
	}
	if o.covers(t0.Add(maxOutage + outageAfter + time.Second)) {
		t.Errorf("an hour away covers %s after its start", maxOutage+outageAfter+time.Second)
	}
	if !o.covers(t0.Add(maxOutage)) {
		t.Errorf("does not cover %s after its start", maxOutage)
	}
	o = engineOutage{}
	o.broke(t0)
	o.broke(t0.Add(outageGap + time.Second))
	if o.covers(t0.Add(-outageBefore)) {
		t.Error("signs more than outageGap apart make one outage")
	}
	o = engineOutage{}
	o.broke(t0.Add(time.Hour)) // a clock an hour ahead
	o.broke(t0)                // corrected
	if o.covers(t0.Add(10 * time.Minute)) {
		t.Error("after the clock went back, the outage still reaches the old clock's time")
	}
}
