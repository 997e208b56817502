package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// An engine that goes down stops every container and, coming back,
// starts those of policy always (or leaves them for hostlet to start):
// those exits are the engine's, and three engine restarts in a few
// minutes must not make a CrashLoopBackOff, which would roll a good
// update back. The same exits with no outage around them are crashes.
func TestEngineRestartsAreNoCrashes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage bool
		// restartedBy: "engine" (the container's policy, a start event)
		// or "hostlet" (it stays exited and the sync starts it).
		restartedBy string
		wantReason  string
		wantPhase   string
	}{
		{name: "engine restarts it, its stream broken", outage: true, restartedBy: "engine", wantReason: "the engine restarted", wantPhase: hsync.PhaseRunning},
		{name: "hostlet restarts it, the stream broken", outage: true, restartedBy: "hostlet", wantPhase: hsync.PhaseRunning},
		{name: "engine restarts it, no outage", restartedBy: "engine", wantReason: "exited (128)", wantPhase: hsync.PhaseFailed},
		{name: "hostlet restarts it, no outage", restartedBy: "hostlet", wantPhase: hsync.PhaseFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := synctest.NewFake()
			ev := eventlog.NewLog(100)
			s, err := hsync.New(fake, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Concurrency: 1},
				slog.New(slog.DiscardHandler), ev)
			if err != nil {
				t.Fatal(err)
			}
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, `
version: v1beta1
id: web
containers:
  - {name: app, image: "example.org/app:1"}
`)}, Ready: true})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				<-done
			})
			restarts := func() []string {
				var out []string
				for _, e := range ev.List() {
					if e.Type == eventlog.Restart {
						out = append(out, e.Reason)
					}
				}
				return out
			}
			for i := range 3 {
				id := runningContainer(t, fake)
				if tc.outage {
					fake.Emit(hruntime.Event{Action: hruntime.EventStreamBroke, Time: time.Now()})
				}
				stopByEngine(t, fake, id, tc.restartedBy == "engine")
				testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
					return len(restarts()) == i+1 && s.Report().Pods[0].Containers[0].State == hruntime.StateRunning,
						fmt.Sprintf("restart %d: restart events %q", i+1, restarts())
				})
			}
			if tc.wantReason != "" && !slices.Equal(restarts(), []string{tc.wantReason, tc.wantReason, tc.wantReason}) {
				t.Errorf("restart events %q, want three %q", restarts(), tc.wantReason)
			}
			if err := s.SyncOnce(ctx); err != nil && tc.wantPhase == hsync.PhaseRunning {
				t.Fatal(err)
			}
			if p := s.Report().Pods[0]; p.Phase != tc.wantPhase || p.Containers[0].Restarts != 3 {
				t.Errorf("pod %s (%s), %d restarts; want %s, 3 restarts", p.Phase, p.Reason, p.Containers[0].Restarts, tc.wantPhase)
			}
		})
	}
}

// runningContainer waits for the fake's one container to run and
// returns its ID.
func runningContainer(t *testing.T, fake *synctest.Fake) string {
	t.Helper()
	var id string
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		list, _ := fake.List(t.Context())
		if len(list) != 1 || list[0].State != hruntime.StateRunning {
			return false, fmt.Sprintf("containers %+v", list)
		}
		id = list[0].ID
		return true, ""
	})
	return id
}

// stopByEngine stops container id as an engine going down does: exit
// 128, then the engine's start by policy (engineStarts), or a plain stop
// that the engine does not undo.
func stopByEngine(t *testing.T, fake *synctest.Fake, id string, engineStarts bool) {
	t.Helper()
	if engineStarts {
		if err := fake.Exit(id, 128); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := fake.Stop(t.Context(), id, 0); err != nil {
		t.Fatal(err)
	}
}

// A new version whose containers an engine just back refuses to start
// (Docker 20.10 after a restart: "failed to update store for object type
// *libnetwork.endpoint") is not rolled back for it: the start is tried
// again and the update completes. The same refusal with no outage
// around it fails the update, as before.
func TestStartRefusedAsTheEngineComesBackIsNoRollback(t *testing.T) {
	for _, outage := range []bool{true, false} {
		t.Run(fmt.Sprintf("outage %v", outage), func(t *testing.T) {
			e := newRolloutEnv(t, nil)
			e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
			e.sync(0)
			e.complete("web", "example.org/app:1")
			if outage {
				e.fake.Emit(hruntime.Event{Action: hruntime.EventStreamBroke, Time: e.clk.Now()})
				e.feed()
			}
			e.fake.FailStarts(errors.New("failed to update store for object type *libnetwork.endpoint: open : no such file or directory"))
			e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
			e.sync(time.Second)
			e.sync(11 * time.Second)
			if rb := e.eventsOf(eventlog.Rollback); !outage && (len(rb) != 1 || !strings.Contains(rb[0].Reason, "libnetwork")) {
				t.Fatalf("rollbacks %+v with no outage, want one for the refused start", rb)
			} else if outage && len(rb) != 0 {
				t.Fatalf("rollbacks %+v while the engine came back, want none", rb)
			}
			if !outage {
				return
			}
			// Past the pod's backoff (10 s, then 20 s).
			e.fake.FailStarts(nil)
			e.sync(30 * time.Second)
			e.complete("web", "example.org/app:2")
		})
	}
}
