package sync_test

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

const pullPodFmt = `
version: v1beta1
id: %s
containers:
  - {name: app, image: "%s"}
`

// pullSyncer runs a Syncer on fake until the test ends; Run's return is
// checked, and after it no pull may still be running.
func pullSyncer(t *testing.T, fake *synctest.Fake, pullTimeout time.Duration) (*hsync.Syncer, *eventlog.Log) {
	t.Helper()
	ev := eventlog.NewLog(100)
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Concurrency: 2,
		PullTimeout: pullTimeout,
	}, slog.New(slog.DiscardHandler), ev)
	if err != nil {
		t.Fatal(err)
	}
	return s, ev
}

func runSyncer(t *testing.T, s *hsync.Syncer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		// Run joins its pulls: none is left waiting in the engine.
		waitNoStack(t, "synctest.(*Fake).EnsureImage")
	})
}

func podStatus(s *hsync.Syncer, id string) (hsync.PodStatus, bool) {
	for _, p := range s.Report().Pods {
		if p.ID == id {
			return p, true
		}
	}
	return hsync.PodStatus{}, false
}

func waitPodPhase(t *testing.T, s *hsync.Syncer, id, phase, reason string) hsync.PodStatus {
	t.Helper()
	var p hsync.PodStatus
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		var ok bool
		p, ok = podStatus(s, id)
		return ok && p.Phase == phase && p.Reason == reason,
			fmt.Sprintf("pod %s: %v phase %s reason %q message %q, want %s %q", id, ok, p.Phase, p.Reason, p.Message, phase, reason)
	})
	return p
}

func runningSlot(fake *synctest.Fake, pod, slot string) (hruntime.Container, bool) {
	list, _ := fake.List(context.Background())
	for _, c := range list {
		if c.Pod() == pod && c.Slot() == slot && c.State == hruntime.StateRunning {
			return c, true
		}
	}
	return hruntime.Container{}, false
}

// Finding 8: one pod's pull that hangs must not delay any other pod. The
// pod waits Pending/Pulling, a new pod is created meanwhile, and releasing
// the pull converges the first.
func TestHangingPullDoesNotDelayOtherPods(t *testing.T) {
	fake := synctest.NewFake()
	const slowImg = "registry.example.org/slow:1"
	release := fake.BlockPull(slowImg)
	t.Cleanup(release)
	s, ev := pullSyncer(t, fake, time.Hour)
	runSyncer(t, s)

	slow := decodePod(t, fmt.Sprintf(pullPodFmt, "slow", slowImg))
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{slow}, Ready: true})
	p := waitPodPhase(t, s, "slow", hsync.PhasePending, hsync.ReasonPulling)
	if !strings.Contains(p.Message, slowImg) {
		t.Errorf("pulling pod's message %q does not name the image", p.Message)
	}

	// A new pod, while the first one's pull hangs.
	fast := decodePod(t, fmt.Sprintf(pullPodFmt, "fast", "example.org/fast:1"))
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{slow, fast}, Ready: true})
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		_, ok := runningSlot(fake, "fast", "app")
		return ok, "pod fast not running while pod slow's pull hangs"
	})
	waitPodPhase(t, s, "fast", hsync.PhaseRunning, "")
	if p, _ := podStatus(s, "slow"); p.Phase != hsync.PhasePending || p.Reason != hsync.ReasonPulling {
		t.Errorf("slow while its pull hangs: phase %s reason %q, want Pending Pulling", p.Phase, p.Reason)
	}
	if _, ok := runningSlot(fake, "slow", "app"); ok {
		t.Error("pod slow runs before its image is pulled")
	}

	// Syncs while the pull runs join it: no second pull.
	for range 3 {
		s.Trigger()
	}
	release()
	waitPodPhase(t, s, "slow", hsync.PhaseRunning, "")
	pulls := 0
	for _, c := range fake.Calls() {
		if c.Method == "EnsureImage" && c.Arg == slowImg {
			pulls++
		}
	}
	// One look (is it present?) and one pull.
	if pulls > 2 {
		t.Errorf("%d EnsureImage calls for %s, want one presence check and one pull", pulls, slowImg)
	}
	for _, e := range ev.List() {
		if e.Type == eventlog.PullFailed || e.Type == eventlog.Failed {
			t.Errorf("unexpected event %+v", e)
		}
	}
}

// A recreate for a new image keeps the old container running until the new
// image is present.
func TestPullBeforeStopOnRecreate(t *testing.T) {
	fake := synctest.NewFake()
	s, _ := pullSyncer(t, fake, time.Hour)
	runSyncer(t, s)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(pullPodFmt, "web", "example.org/web:1"))}, Ready: true})
	waitPodPhase(t, s, "web", hsync.PhaseRunning, "")
	old, _ := runningSlot(fake, "web", "app")

	const next = "example.org/web:2"
	release := fake.BlockPull(next)
	t.Cleanup(release)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(pullPodFmt, "web", next))}, Ready: true})
	waitPodPhase(t, s, "web", hsync.PhasePending, hsync.ReasonPulling)
	if c, ok := runningSlot(fake, "web", "app"); !ok || c.ID != old.ID {
		t.Fatalf("while the new image is pulled: running %v %s, want the old container %s", ok, c.ID, old.ID)
	}
	release()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		c, ok := runningSlot(fake, "web", "app")
		return ok && c.ID != old.ID && c.Image == next, fmt.Sprintf("web/app = %v %s %s, want a new container of %s", ok, c.ID, c.Image, next)
	})
	waitPodPhase(t, s, "web", hsync.PhaseRunning, "")
}

// A pull that outlasts sync.pullTimeout fails the pod as a failed pull
// does, saying it timed out; the other pods are not held up.
func TestPullTimeout(t *testing.T) {
	fake := synctest.NewFake()
	const img = "registry.example.org/hangs:1"
	t.Cleanup(fake.BlockPull(img))
	s, ev := pullSyncer(t, fake, 200*time.Millisecond)
	runSyncer(t, s)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{
		decodePod(t, fmt.Sprintf(pullPodFmt, "hangs", img)),
		decodePod(t, fmt.Sprintf(pullPodFmt, "other", "example.org/other:1")),
	}, Ready: true})
	p := waitPodPhase(t, s, "hangs", hsync.PhaseFailed, hsync.ReasonPull)
	if !strings.Contains(p.Message, "timed out after 200ms") || !strings.Contains(p.Message, "sync.pullTimeout") || !strings.Contains(p.Message, img) {
		t.Errorf("message %q, want the image and that the pull timed out after 200ms (sync.pullTimeout)", p.Message)
	}
	waitPodPhase(t, s, "other", hsync.PhaseRunning, "")
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		for _, e := range ev.List() {
			if e.Type == eventlog.PullFailed && e.Pod == "hangs" && strings.Contains(e.Message, "timed out") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no pull-failed event for hangs: %+v", ev.List())
	})
}

// hostlet run --once: SyncOnce waits for the pulls it starts, so one call
// converges; while it waits the pod is reported Pending/Pulling, and a
// pull that times out is its error.
func TestSyncOnceWaitsForPulls(t *testing.T) {
	fake := synctest.NewFake()
	const img = "registry.example.org/slow:1"
	release := fake.BlockPull(img)
	t.Cleanup(release)
	s, _ := pullSyncer(t, fake, time.Hour)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{
		decodePod(t, fmt.Sprintf(pullPodFmt, "slow", img)),
		decodePod(t, fmt.Sprintf(pullPodFmt, "fast", "example.org/fast:1")),
	}, Ready: true})
	done := make(chan error, 1)
	go func() { done <- s.SyncOnce(t.Context()) }()
	waitPodPhase(t, s, "slow", hsync.PhasePending, hsync.ReasonPulling)
	if _, ok := runningSlot(fake, "fast", "app"); !ok {
		t.Error("fast not running while SyncOnce waits for slow's pull")
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("SyncOnce: %v", err)
	}
	for _, id := range []string{"slow", "fast"} {
		if _, ok := runningSlot(fake, id, "app"); !ok {
			t.Errorf("pod %s not running after SyncOnce", id)
		}
	}

	const hangs = "registry.example.org/hangs:1"
	t.Cleanup(fake.BlockPull(hangs))
	s2, _ := pullSyncer(t, fake, 100*time.Millisecond)
	s2.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(pullPodFmt, "hangs", hangs))}, Ready: true})
	err := s2.SyncOnce(t.Context())
	if err == nil || !strings.Contains(err.Error(), "pod hangs") || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("SyncOnce with a pull that hangs = %v, want pod hangs timed out", err)
	}
	waitNoStack(t, "synctest.(*Fake).EnsureImage")
}

// waitNoStack waits until no goroutine runs a function whose name contains
// pattern.
func waitNoStack(t *testing.T, pattern string) {
	t.Helper()
	var stacks string
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:goruntime.Stack(buf, true)])
		return !strings.Contains(stacks, pattern), "a goroutine still runs " + pattern + ":\n" + stacks
	})
}

// A pod one of whose images fails to pull fails (ErrImagePull, with
// backoff) even while another of its images is still being pulled: the
// failing pull is not retried at every sync.
func TestFailedPullFailsPodWhileSiblingPulls(t *testing.T) {
	fake := synctest.NewFake()
	const hangs, bad = "registry.example.org/hangs:1", "registry.example.org/denied:1"
	t.Cleanup(fake.BlockPull(hangs))
	fake.FailPull(bad, fmt.Errorf("denied"))
	s, _ := pullSyncer(t, fake, time.Hour)
	pod := fmt.Sprintf("version: v1beta1\nid: p\ncontainers:\n  - {name: a, image: %q}\n  - {name: b, image: %q}\n", hangs, bad)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, pod)}, Ready: true})
	for range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		_ = s.SyncOnce(ctx)
		cancel()
	}
	p, _ := podStatus(s, "p")
	if p.Phase != hsync.PhaseFailed || p.Reason != hsync.ReasonPull {
		t.Errorf("pod: phase %s reason %q message %q, want Failed %s", p.Phase, p.Reason, p.Message, hsync.ReasonPull)
	}
	pulls := 0
	for _, c := range fake.Calls() {
		if c.Method == "EnsureImage" && strings.Contains(c.Arg, bad) {
			pulls++
		}
	}
	// One presence check and one pull; backoff holds the retries.
	if pulls > 2 {
		t.Errorf("%d engine calls for the failing image in 5 syncs, want the backoff to hold them", pulls)
	}
}
