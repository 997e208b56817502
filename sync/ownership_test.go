package sync_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/synctest"
)

// readLabels are the io.hostlet.* labels the syncer reads back from a
// container: each must be set by hostlet at create, so that an image's
// label of that name never shows through (the engine gives a container
// its image's labels under its own).
var readLabels = []string{
	hruntime.LabelManaged, hruntime.LabelInstance, hruntime.LabelPod, hruntime.LabelContainer, hruntime.LabelHash,
	hruntime.LabelSource, hruntime.LabelRevision, hsync.LabelNetworks, hsync.LabelFiles, hsync.LabelSpec,
	hruntime.LabelPodIP, podspec.LabelNetworkOf,
}

// TestImageLabelsCannotShowThroughOnPodContainers: every container
// hostlet creates (a pod's only one, an infra container, the app
// containers that join it) sets every label hostlet reads back, empty
// when unused.
func TestImageLabelsCannotShowThroughOnPodContainers(t *testing.T) {
	for _, side := range []bool{false, true} {
		fake := synctest.NewFake()
		fake.AddNetwork("corp")
		s := newFakeSyncer(t, fake)
		s.SetDesired(hsync.Desired{Pods: []hsync.Pod{netPod(t, "web", side)}, Ready: true})
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		specs := specsOf(t, fake, "web")
		if len(specs) == 0 {
			t.Fatal("no containers")
		}
		for slot, spec := range specs {
			if spec.Name != hruntime.ContainerName("unit", "web", slot, spec.Labels[hruntime.LabelHash]) {
				t.Errorf("%s: name %q is not the one hruntime.ContainerName gives its labels", slot, spec.Name)
			}
			for _, k := range readLabels {
				if _, ok := spec.Labels[k]; !ok {
					t.Errorf("%s (infra pod %v): label %s not set at create: an image's would show through", slot, side, k)
				}
			}
		}
	}
}

// TestContainersWithoutTheEmptyLabelsAreNotRecreated: containers an
// earlier hostlet made, without the labels now set empty, plan exactly as
// those made now: an upgrade recreates nothing.
func TestContainersWithoutTheEmptyLabelsAreNotRecreated(t *testing.T) {
	env := hsync.NewEnvHasher([]byte("0123456789abcdef0123456789abcdef"))
	pods := []hsync.Pod{netPod(t, "one", false), netPod(t, "two", true)}
	pods = append(pods, fakePods(t, 4, "1")...)
	now := hsync.Simulate("unit", pods, env)
	earlier := make([]hruntime.Container, len(now))
	for i, c := range now {
		c.Labels = maps.Clone(c.Labels)
		maps.DeleteFunc(c.Labels, func(k, v string) bool { return v == "" && strings.HasPrefix(k, "io.hostlet.") })
		earlier[i] = c
	}
	for what, actual := range map[string][]hruntime.Container{"made now": now, "made by an earlier hostlet": earlier} {
		plan := hsync.MakePlan(pods, actual, hsync.PlanOptions{Prune: true, EnvHasher: env})
		if plan.Changed() {
			t.Errorf("containers %s: the plan changes %+v", what, plan.Counts())
		}
	}
}

// TestContainersWithoutAPodAreNoPods: a listed container without a pod
// or slot label (one the runtime would not list; a caller's list may)
// is never planned, pruned or reported as a pod's, and its events count
// for no pod.
func TestContainersWithoutAPodAreNoPods(t *testing.T) {
	keep := decodePod(t, "version: v1beta1\nid: keep\ncontainers:\n  - {name: app, image: example.org/app:1}\n")
	own := hsync.Simulate("unit", []hsync.Pod{keep}, nil)
	stray := []hruntime.Container{
		{ID: "no-pod", Name: "eager_turing", State: hruntime.StateExited, Labels: map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: "unit"}},
		{ID: "no-slot", Name: "brave_hopper", State: hruntime.StateExited, Labels: map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: "unit", hruntime.LabelPod: "gone"}},
		{ID: "no-slot-keep", Name: "calm_lovelace", State: hruntime.StateExited, Labels: map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: "unit", hruntime.LabelPod: "keep"}},
	}
	plan := hsync.MakePlan([]hsync.Pod{keep}, append(stray, own...), hsync.PlanOptions{Prune: true})
	if plan.Changed() || len(plan.Pods) != 1 || plan.Pods[0].ID != "keep" {
		t.Errorf("plan = %+v, want keep alone, unchanged", plan)
	}
	if applied := hsync.Applied(stray); len(applied) != 0 {
		t.Errorf("Applied = %v, want no pod", applied)
	}

	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	for _, labels := range []map[string]string{
		stray[0].Labels,
		stray[1].Labels,
		{hruntime.LabelContainer: "app"},
	} {
		if s.HandleEvent(t.Context(), hruntime.Event{Action: "die", ContainerID: "x", Labels: labels, ExitCode: 1, Time: time.Now()}) {
			t.Errorf("an event with labels %v asked for a sync", labels)
		}
	}
	if pods := s.Report().Pods; len(pods) != 0 {
		t.Errorf("events of containers without a pod made pods %+v", pods)
	}
}

// TestNameConflictRemovesOnlyAProvenContainer: a create that finds its
// name taken removes the holder only when a list proves it hostlet's; a
// container of that name that is not a pod's is left alone and the pod
// fails with why.
func TestNameConflictRemovesOnlyAProvenContainer(t *testing.T) {
	fake := synctest.NewFake()
	p := decodePod(t, "version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: example.org/app:1}\n")
	name := hruntime.ContainerName("unit", "web", "app", manifest.ContainerHash(p.Manifest, 0))
	squatter, err := fake.Create(t.Context(), hruntime.ContainerSpec{Name: name, Image: "example.org/other:1"})
	if err != nil {
		t.Fatal(err)
	}
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{p}, Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil || !strings.Contains(err.Error(), "cannot prove") {
		t.Errorf("SyncOnce = %v, want the pod failed: its name is held by a container hostlet cannot prove it made", err)
	}
	for _, c := range fake.Calls() {
		if (c.Method == "Remove" || c.Method == "Stop") && c.Arg != "" && (c.Arg == squatter || c.Arg == name) {
			t.Errorf("%s of the container holding the name", c.Method)
		}
	}
	if _, ok := fake.Spec(squatter); !ok {
		t.Error("the container holding the name is gone")
	}
}
