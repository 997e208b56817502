package sync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

const brokenPodFmt = `
version: v1beta1
id: %s
containers:
  - {name: app, image: "example.org/app:1", ports: [{containerPort: 80, hostPort: 8080}]}
  - {name: side, image: "example.org/side:1"}
`

// An engine restart that cuts a container's start leaves it unable to start
// ever again ("task already exists", Exited (128)): the fault suite's
// engine-restart class found pods that never converged. A container whose
// start fails is created anew; when it is the infra container, the app
// containers in its network namespace are created anew with it.
func TestContainerThatDoesNotStartIsCreatedAnew(t *testing.T) {
	tests := []struct {
		name, manifest, broken string
		// recreated are the slots that must have a new container.
		recreated []string
		kept      []string
	}{
		{name: "single container", manifest: fmt.Sprintf(pullPodFmt, "p", "example.org/app:1"), broken: "app", recreated: []string{"app"}},
		{name: "app of a pod with infra", manifest: fmt.Sprintf(brokenPodFmt, "p"), broken: "side", recreated: []string{"side"}, kept: []string{"app", hruntime.InfraName}},
		{name: "infra", manifest: fmt.Sprintf(brokenPodFmt, "p"), broken: hruntime.InfraName, recreated: []string{hruntime.InfraName, "app", "side"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := synctest.NewFake()
			s, _ := pullSyncer(t, fake, time.Hour)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, tt.manifest)}, Ready: true})
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatalf("first sync: %v", err)
			}
			before := slotIDs(t, fake)
			if err := fake.BreakStart(before[tt.broken]); err != nil {
				t.Fatal(err)
			}
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatalf("sync after the broken start: %v", err)
			}
			after := slotIDs(t, fake)
			for _, slot := range tt.recreated {
				if c, ok := runningSlot(fake, "p", slot); !ok {
					t.Errorf("%s not running", slot)
				} else if c.ID == before[slot] {
					t.Errorf("%s is the old container, want one created anew", slot)
				}
			}
			for _, slot := range tt.kept {
				if after[slot] != before[slot] {
					t.Errorf("%s was replaced; only the broken container should be", slot)
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d containers after, %d before: %v", len(after), len(before), after)
			}
			if p, _ := podStatus(s, "p"); p.Phase != hsync.PhaseRunning {
				t.Errorf("pod: phase %s reason %q message %q, want Running", p.Phase, p.Reason, p.Message)
			}
			// Converged: the next sync changes nothing.
			fake.Reset()
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			for _, c := range fake.Calls() {
				if c.Method != "List" {
					t.Errorf("sync after convergence called %s %s", c.Method, c.Arg)
				}
			}
		})
	}
}

// A stale infra task recreates the pod's app containers that run or are to
// run, never one that is done (restartPolicy Never, exited 0): a one-shot
// job does not run twice.
func TestStaleInfraKeepsFinishedContainers(t *testing.T) {
	fake := synctest.NewFake()
	s, _ := pullSyncer(t, fake, time.Hour)
	pod := "version: v1beta1\nid: p\nrestartPolicy: Never\ncontainers:\n  - {name: app, image: \"example.org/app:1\", ports: [{containerPort: 80, hostPort: 8080}]}\n  - {name: job, image: \"example.org/job:1\"}\n"
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, pod)}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := slotIDs(t, fake)
	if err := fake.Exit(before["job"], 0); err != nil {
		t.Fatal(err)
	}
	if err := fake.BreakStart(before[hruntime.InfraName]); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatalf("sync after the broken infra: %v", err)
	}
	after := slotIDs(t, fake)
	if after["job"] != before["job"] {
		t.Error("the finished job was created anew: it would run twice")
	}
	if _, ok := runningSlot(fake, "p", "job"); ok {
		t.Error("the finished job runs again")
	}
	if c, ok := runningSlot(fake, "p", "app"); !ok || c.ID == before["app"] {
		t.Errorf("app: running %v, id %s (before %s): want it created anew with the infra", ok, c.ID, before["app"])
	}
}

// slotIDs maps each slot of pod p to its container's ID.
func slotIDs(t *testing.T, fake *synctest.Fake) map[string]string {
	t.Helper()
	list, err := fake.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, c := range list {
		if c.Pod() == "p" {
			ids[c.Slot()] = c.ID
		}
	}
	return ids
}
