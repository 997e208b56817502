package clock_test

import (
	"context"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// received returns what ch holds now, without waiting (a Fake sends while
// Advance runs, so after it returns the value is there or not at all).
func received(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

// step is one action on a fake clock and its timer or ticker, and what the
// channel must then hold (zero: nothing).
type step struct {
	advance time.Duration
	stop    bool
	reset   time.Duration // > 0: Reset(reset)
	// want is the time received after the step, as an offset from t0; 0
	// means nothing is received.
	want time.Duration
	// wasActive is what Stop or Reset must report.
	wasActive bool
}

func TestFakeTimer(t *testing.T) {
	tests := []struct {
		name  string
		d     time.Duration
		steps []step
	}{
		{name: "fires at d, not before", d: 10 * time.Second, steps: []step{
			{advance: 9 * time.Second},
			{advance: time.Second, want: 10 * time.Second},
			{advance: time.Hour},
		}},
		{name: "sends the time it was due", d: 10 * time.Second, steps: []step{
			{advance: time.Minute, want: 10 * time.Second},
		}},
		{name: "stopped before firing never fires", d: 10 * time.Second, steps: []step{
			{advance: 5 * time.Second},
			{stop: true, wasActive: true},
			{advance: time.Hour},
			{stop: true},
		}},
		{name: "stop drains a value not received", d: time.Second, steps: []step{
			{advance: time.Second, want: -1}, // fired, left unread (checked below)
			{stop: true},
		}},
		{name: "reset moves an active timer", d: 10 * time.Second, steps: []step{
			{advance: 5 * time.Second},
			{reset: 10 * time.Second, wasActive: true},
			{advance: 9 * time.Second},
			{advance: time.Second, want: 15 * time.Second},
		}},
		{name: "reset of a fired timer fires again", d: time.Second, steps: []step{
			{advance: time.Second, want: time.Second},
			{reset: 2 * time.Second},
			{advance: 2 * time.Second, want: 3 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clock.NewFake(t0)
			tm := f.NewTimer(tt.d)
			for i, s := range tt.steps {
				switch {
				case s.stop:
					if got := tm.Stop(); got != s.wasActive {
						t.Errorf("step %d: Stop = %v, want %v", i, got, s.wasActive)
					}
				case s.reset > 0:
					if got := tm.Reset(s.reset); got != s.wasActive {
						t.Errorf("step %d: Reset = %v, want %v", i, got, s.wasActive)
					}
				default:
					f.Advance(s.advance)
				}
				if s.want < 0 {
					continue // left in the channel on purpose
				}
				checkReceived(t, i, tm.C(), s.want)
			}
		})
	}
}

// checkReceived checks what step i finds on c: nothing when want is 0,
// else the time t0+want.
func checkReceived(t *testing.T, i int, c <-chan time.Time, want time.Duration) {
	t.Helper()
	v, ok := received(c)
	switch {
	case want == 0 && ok:
		t.Errorf("step %d: received %v, want nothing", i, v.Sub(t0))
	case want != 0 && !ok:
		t.Errorf("step %d: received nothing, want %v", i, want)
	case want != 0 && !v.Equal(t0.Add(want)):
		t.Errorf("step %d: received %v, want %v", i, v.Sub(t0), want)
	}
}

func TestFakeTimerZeroFiresAtOnce(t *testing.T) {
	f := clock.NewFake(t0)
	tm := f.NewTimer(0)
	if v, ok := received(tm.C()); !ok || !v.Equal(t0) {
		t.Errorf("NewTimer(0): received %v, %v; want t0 at once", v, ok)
	}
	if n := f.Timers(); n != 0 {
		t.Errorf("Timers = %d after a timer fired, want 0", n)
	}
}

func TestFakeTicker(t *testing.T) {
	tests := []struct {
		name  string
		d     time.Duration
		steps []step
	}{
		{name: "ticks every d", d: 10 * time.Second, steps: []step{
			{advance: 9 * time.Second},
			{advance: time.Second, want: 10 * time.Second},
			{advance: 10 * time.Second, want: 20 * time.Second},
			{advance: 5 * time.Second},
			{advance: 5 * time.Second, want: 30 * time.Second},
		}},
		{name: "a slow receiver gets one tick, the first", d: time.Second, steps: []step{
			{advance: 5 * time.Second, want: time.Second},
			{advance: time.Second, want: 6 * time.Second},
		}},
		{name: "stopped, it ticks no more", d: time.Second, steps: []step{
			{advance: time.Second, want: time.Second},
			{stop: true},
			{advance: time.Hour},
		}},
		{name: "reset ticks every new d from now", d: 10 * time.Second, steps: []step{
			{advance: 5 * time.Second},
			{reset: 3 * time.Second},
			{advance: 3 * time.Second, want: 8 * time.Second},
			{advance: 3 * time.Second, want: 11 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clock.NewFake(t0)
			tk := f.NewTicker(tt.d)
			defer tk.Stop()
			for i, s := range tt.steps {
				switch {
				case s.stop:
					tk.Stop()
				case s.reset > 0:
					tk.Reset(s.reset)
				default:
					f.Advance(s.advance)
				}
				checkReceived(t, i, tk.C(), s.want)
			}
		})
	}
}

func TestFakeTickerPanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewTicker(0) did not panic")
		}
	}()
	clock.NewFake(t0).NewTicker(0)
}

// TestFakeFiresInTimeOrder: one Advance past several timers fires each
// with its own time, and the clock ends at the end of the advance.
func TestFakeFiresInTimeOrder(t *testing.T) {
	f := clock.NewFake(t0)
	late, early := f.NewTimer(3*time.Second), f.NewTimer(time.Second)
	tk := f.NewTicker(2 * time.Second)
	defer tk.Stop()
	f.Advance(10 * time.Second)
	for name, c := range map[string]struct {
		ch   <-chan time.Time
		want time.Duration
	}{"late": {late.C(), 3 * time.Second}, "early": {early.C(), time.Second}, "ticker": {tk.C(), 2 * time.Second}} {
		if v, ok := received(c.ch); !ok || !v.Equal(t0.Add(c.want)) {
			t.Errorf("%s: received %v (%v), want t0+%v", name, v.Sub(t0), ok, c.want)
		}
	}
	if got := f.Now(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("Now = t0+%v, want t0+10s", got.Sub(t0))
	}
	if got := f.Since(t0); got != 10*time.Second {
		t.Errorf("Since(t0) = %v, want 10s", got)
	}
	if n := f.Timers(); n != 1 {
		t.Errorf("Timers = %d, want 1 (the ticker)", n)
	}
}

// TestFakeWaitForTimers: a test waits for the goroutine under test to
// reach its wait, then advances; nothing sleeps.
func TestFakeWaitForTimers(t *testing.T) {
	f := clock.NewFake(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan bool)
	go func() { done <- clock.Sleep(ctx, f, time.Minute) }()
	if err := f.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if !<-done {
		t.Error("Sleep = false, want true after the clock passed its duration")
	}
	short, c := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer c()
	if err := f.WaitForTimers(short, 1); err == nil {
		t.Error("WaitForTimers = nil with no timer, want the context's error")
	}
}

// TestFakeConcurrent: sleepers and an advancer at once (run with -race).
func TestFakeConcurrent(t *testing.T) {
	f := clock.NewFake(t0)
	const sleepers = 20
	var wg gosync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range sleepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				if !clock.Sleep(ctx, f, time.Duration(i+j+1)*time.Second) {
					t.Error("Sleep ended by its context")
					return
				}
				_ = f.Since(t0)
			}
		}()
	}
	stop := make(chan struct{})
	advancer := make(chan struct{})
	go func() {
		defer close(advancer)
		for {
			select {
			case <-stop:
				return
			default:
				f.Advance(time.Second)
				_ = f.Timers()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-advancer
}

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{name: "passes", ctx: context.Background(), d: time.Millisecond, want: true},
		{name: "zero", ctx: context.Background(), d: 0, want: true},
		{name: "cancelled", ctx: cancelled, d: time.Hour, want: false},
		{name: "cancelled zero", ctx: cancelled, d: 0, want: false},
	}
	for _, tt := range tests {
		for name, c := range map[string]clock.Clock{"real": clock.Real{}, "nil": nil} {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				if got := clock.Sleep(tt.ctx, c, tt.d); got != tt.want {
					t.Errorf("Sleep = %v, want %v", got, tt.want)
				}
			})
		}
	}
}

func TestReal(t *testing.T) {
	var c clock.Clock = clock.Real{}
	start := c.Now()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	if tm.Stop() {
		t.Error("Stop of a fired timer = true")
	}
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Reset(time.Millisecond)
	<-tk.C()
	tk.Stop()
	if d := c.Since(start); d < 2*time.Millisecond {
		t.Errorf("Since = %v after a timer and two ticks of 1ms", d)
	}
	if tm.Reset(time.Hour) {
		t.Error("Reset of a fired timer = true")
	}
	if !tm.Stop() {
		t.Error("Stop of a reset timer = false")
	}
}
