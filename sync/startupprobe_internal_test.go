package sync

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// scriptedExec answers exec probes by their command: "startup" fails
// until started is set, "live" always fails; each is counted.
type scriptedExec struct {
	started       atomic.Bool
	startup, live atomic.Int64
}

func (e *scriptedExec) Exec(_ context.Context, _ string, cmd []string) (int, error) {
	switch cmd[0] {
	case "startup":
		e.startup.Add(1)
		if e.started.Load() {
			return 0, nil
		}
	case "live":
		e.live.Add(1)
	}
	return 1, nil
}

func startupPod(startupThreshold int64) (Pod, hruntime.Container) {
	exec := func(cmd string, threshold int64) *manifest.Probe {
		return &manifest.Probe{Type: manifest.ProbeExec, Exec: &manifest.Exec{Command: []string{cmd}}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: threshold}
	}
	m := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{
		Name: "app", Image: "example.org/app:1",
		StartupProbe: exec("startup", startupThreshold), LivenessProbe: exec("live", 1), ReadinessProbe: exec("live", 1),
	}}}
	pod := NewPod(m, "test", "rev1")
	c := hruntime.Container{ID: "c1", State: hruntime.StateRunning, IP: "10.0.0.2", Labels: map[string]string{
		hruntime.LabelPod: "web", hruntime.LabelContainer: "app", hruntime.LabelHash: manifest.ContainerHash(pod.Manifest, 0)}}
	return pod, c
}

// A startup probe holds the container's liveness and readiness probes
// until it passes: a liveness probe that would fail at once is not run
// (the container is not restarted) while the startup probe fails, and
// runs once it has passed.
func TestStartupProbeHoldsLivenessUntilItPasses(t *testing.T) {
	exec := &scriptedExec{}
	restarted := make(chan string, 4)
	p := newProber(exec, slog.New(slog.DiscardHandler), func(_ context.Context, _, _, _, _, why string, _ time.Duration) {
		restarted <- why
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); p.stopAll() })
	pod, c := startupPod(100)
	p.update(ctx, []Pod{pod}, []hruntime.Container{c}, nil)

	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		return exec.startup.Load() >= 2, "the startup probe has not run twice"
	})
	if n := exec.live.Load(); n != 0 || p.started("c1") || p.ready("c1") {
		t.Fatalf("before the startup probe passed: %d liveness/readiness checks, started %v, ready %v; want none, false, false", n, p.started("c1"), p.ready("c1"))
	}
	exec.started.Store(true)
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { return p.started("c1"), "the startup probe has not passed" })
	// An update after it passed keeps it passed (not run again).
	p.update(ctx, []Pod{pod}, []hruntime.Container{c}, nil)
	select {
	case why := <-restarted:
		if !strings.HasPrefix(why, "liveness probe: ") {
			t.Errorf("restarted for %q, want the liveness probe", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the liveness probe never ran after the startup probe passed")
	}
	if !p.started("c1") {
		t.Error("the startup probe is not passed after an update")
	}
}

// A startup probe that fails failureThreshold times in a row restarts the
// container, saying so.
func TestStartupProbeFailingRestartsTheContainer(t *testing.T) {
	exec := &scriptedExec{}
	restarted := make(chan string, 4)
	p := newProber(exec, slog.New(slog.DiscardHandler), func(_ context.Context, _, _, _, _, why string, _ time.Duration) {
		restarted <- why
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); p.stopAll() })
	pod, c := startupPod(2)
	p.update(ctx, []Pod{pod}, []hruntime.Container{c}, nil)
	select {
	case why := <-restarted:
		if !strings.HasPrefix(why, "startup probe: exec startup exited with 1") {
			t.Errorf("restarted for %q, want the startup probe", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a failing startup probe never restarted the container")
	}
	if n := exec.live.Load(); n != 0 {
		t.Errorf("%d liveness checks before the startup probe passed", n)
	}
}
