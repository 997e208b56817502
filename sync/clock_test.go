package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

var clockT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClockSyncer is a Syncer on fake whose time is clk: nothing in it
// waits on the real clock.
func fakeClockSyncer(t *testing.T, fake *synctest.Fake, clk clock.Clock) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk,
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func countCalls(fake *synctest.Fake, method, arg string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == method && c.Arg == arg {
			n++
		}
	}
	return n
}

// TestBackoffOnTheClock: a pod whose image pull fails is retried after 10 s,
// then 20 s, as the Syncer's clock tells, and not before; when the
// registry answers again the pod runs. The clock is a fake moved by hand:
// the test never sleeps.
func TestBackoffOnTheClock(t *testing.T) {
	fake := synctest.NewFake()
	const img = "registry.example.org/app:1"
	fake.FailPull(img, errors.New("registry down"))
	clk := clock.NewFake(clockT0)
	s := fakeClockSyncer(t, fake, clk)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(pullPodFmt, "web", img))}, Ready: true})
	ctx := t.Context()

	steps := []struct {
		advance time.Duration
		// pulls is the number of pulls of img made by the sync after the
		// advance; phase and reason the pod's status after it.
		pulls         int
		phase, reason string
	}{
		{advance: 0, pulls: 1, phase: hsync.PhaseFailed, reason: hsync.ReasonPull},
		{advance: 9 * time.Second, pulls: 0, phase: hsync.PhaseFailed, reason: hsync.ReasonPull},
		{advance: time.Second, pulls: 1, phase: hsync.PhaseFailed, reason: hsync.ReasonPull},
		// The second failure doubles the wait.
		{advance: 19 * time.Second, pulls: 0, phase: hsync.PhaseFailed, reason: hsync.ReasonPull},
		{advance: time.Second, pulls: 1, phase: hsync.PhaseRunning, reason: ""},
	}
	for i, st := range steps {
		if i == len(steps)-1 {
			fake.FailPull(img, nil)
		}
		clk.Advance(st.advance)
		before := countCalls(fake, "EnsureImage", img)
		_ = s.SyncOnce(ctx)
		// A presence check, then the pull, are two calls for one pull.
		if got := countCalls(fake, "EnsureImage", img) - before; (got > 0) != (st.pulls > 0) {
			t.Errorf("step %d (t0+%v): %d image calls, want a pull: %v", i, clk.Since(clockT0), got, st.pulls > 0)
		}
		p, ok := podStatus(s, "web")
		if !ok || p.Phase != st.phase || p.Reason != st.reason {
			t.Errorf("step %d (t0+%v): pod %v phase %s reason %q, want %s %q", i, clk.Since(clockT0), ok, p.Phase, p.Reason, st.phase, st.reason)
		}
		if got := s.Report().LastSync.Start; !got.Equal(clk.Now()) {
			t.Errorf("step %d: last sync started at %v, want the clock's %v", i, got, clk.Now())
		}
	}
}

const clockProbedPod = `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    livenessProbe:
      type: exec
      exec: {command: [check]}
      initialDelaySeconds: 5
      periodSeconds: 10
      failureThreshold: 3
`

// TestProbePeriodOnTheClock: a liveness probe waits its initial delay,
// probes every period, restarts the container after three failures in a
// row, then waits the initial delay again, each step at the time the
// Syncer's clock says and not before. The clock is a fake moved by hand;
// the test waits only for the probe goroutine to reach its next timer.
func TestProbePeriodOnTheClock(t *testing.T) {
	fake := synctest.NewFake()
	clk := clock.NewFake(clockT0)
	s := fakeClockSyncer(t, fake, clk)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, clockProbedPod)}, Ready: true})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	app, ok := runningSlot(fake, "web", "app")
	if !ok {
		t.Fatalf("pod web not running: %v", fake.Calls())
	}
	fake.SetExecCode(app.ID, 1)

	// waitProbe waits until the probe worker waits on its next timer.
	waitProbe := func(step string) {
		t.Helper()
		if err := clk.WaitForTimers(ctx, 1); err != nil {
			t.Fatalf("%s: the probe worker set no timer: %v", step, err)
		}
	}
	waitProbe("start")
	steps := []struct {
		advance time.Duration
		pass    bool // the probe passes from this step on
		// After the step: the probes made so far, the container's restarts
		// and health.
		probes, restarts int
		healthy          bool
	}{
		{advance: 4 * time.Second, probes: 0, healthy: true},           // t0+4: in the initial delay
		{advance: time.Second, probes: 1, healthy: true},               // t0+5: the first probe fails
		{advance: 9 * time.Second, probes: 1, healthy: true},           // t0+14
		{advance: time.Second, probes: 2, healthy: true},               // t0+15: the second fails
		{advance: 10 * time.Second, probes: 3, restarts: 1},            // t0+25: the third; restarted
		{advance: 5 * time.Second, probes: 3, restarts: 1},             // t0+30: the initial delay again, no probe
		{advance: 9 * time.Second, pass: true, probes: 3, restarts: 1}, // t0+39
		{advance: time.Second, probes: 4, restarts: 1, healthy: true},  // t0+40: passes
	}
	for _, st := range steps {
		if st.pass {
			fake.SetExecCode(app.ID, 0)
		}
		clk.Advance(st.advance)
		at := clk.Since(clockT0)
		if clk.Timers() == 0 {
			// The worker's timer fired: wait until it is done with this
			// step (probe, restart) and waits on its next timer.
			waitProbe(fmt.Sprintf("t0+%v", at))
		}
		if got := countCalls(fake, "Exec", app.ID); got != st.probes {
			t.Errorf("t0+%v: %d probes, want %d", at, got, st.probes)
		}
		var c hsync.ContainerStatus
		if p, ok := podStatus(s, "web"); ok && len(p.Containers) == 1 {
			c = p.Containers[0]
		}
		if c.Restarts != st.restarts || c.Healthy != st.healthy {
			t.Errorf("t0+%v: restarts %d healthy %v, want %d %v", at, c.Restarts, c.Healthy, st.restarts, st.healthy)
		}
	}
	// The status shows the restart from the next sync on.
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	p, _ := podStatus(s, "web")
	la := p.LastAction
	if la == nil || la.Action != "restart" || !strings.HasPrefix(la.Reason, "liveness probe failed") || !la.Time.Equal(clockT0.Add(25*time.Second)) {
		t.Errorf("last action %+v, want the probe's restart at t0+25s", la)
	}
	if n := countCalls(fake, "Stop", app.ID); n != 1 {
		t.Errorf("%d stops of the container, want 1 (the probe's restart)", n)
	}
}
