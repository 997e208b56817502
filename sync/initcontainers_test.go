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

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// initPod is a pod of one app container after two init containers.
func initPod(id string) manifest.Manifest {
	m := onePod(id)
	m.InitContainers = []manifest.Container{
		{Name: "first", Image: "example.org/init:1", Command: []string{"first"}},
		{Name: "second", Image: "example.org/init:1", Command: []string{"second"}},
	}
	return m
}

// initStep plans and applies m once on fake, with inits remembering
// failures, and returns the pod's result.
func initStep(t *testing.T, fake *synctest.Fake, inits *hsync.InitRuns, m manifest.Manifest) hsync.Result {
	t.Helper()
	plan := hsync.MakePlan(pods(m), listed(t, fake), hsync.PlanOptions{})
	opts := tableApplyOptions(nil)
	opts.Inits = inits
	results := hsync.Apply(t.Context(), fake, plan, opts, slog.New(slog.DiscardHandler))
	switch len(results) {
	case 0:
		return hsync.Result{ID: m.ID} // nothing to do
	case 1:
		return results[0]
	}
	t.Fatalf("%d results, want 1", len(results))
	return hsync.Result{}
}

// slotsOf lists the slots of fake's containers with their states
// ("app running", "init.first exited"), sorted.
func slotsOf(t *testing.T, fake *synctest.Fake) []string {
	t.Helper()
	var out []string
	for _, c := range listed(t, fake) {
		out = append(out, c.Slot()+" "+c.State)
	}
	slices.Sort(out)
	return out
}

// exitSlot makes the running container of slot exit with code.
func exitSlot(t *testing.T, fake *synctest.Fake, slot string, code int) {
	t.Helper()
	for _, c := range listed(t, fake) {
		if c.Slot() == slot && c.State == hruntime.StateRunning {
			if err := fake.Exit(c.ID, code); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no running container in slot %s: %v", slot, slotsOf(t, fake))
}

// stopSlot stops the running container of slot, as `docker stop` does.
func stopSlot(t *testing.T, fake *synctest.Fake, slot string) {
	t.Helper()
	for _, c := range listed(t, fake) {
		if c.Slot() == slot && c.State == hruntime.StateRunning {
			if err := fake.Stop(t.Context(), c.ID, 0); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no running container in slot %s: %v", slot, slotsOf(t, fake))
}

func TestInitContainersRunInOrderBeforeTheAppOncePerVersion(t *testing.T) {
	fake, inits, m := synctest.NewFake(), &hsync.InitRuns{}, initPod("web")
	steps := []struct {
		name         string
		before       func()
		manifest     manifest.Manifest
		initializing string
		slots        []string
		// settled: the next plan changes nothing (exited init
		// containers are no change).
		settled bool
	}{
		{name: "a new pod starts its first init container and waits", manifest: m,
			initializing: "init container first (1 of 2) running",
			slots:        []string{"POD running", "init.first running"}},
		{name: "the first exited 0: the second starts", before: func() { exitSlot(t, fake, "init.first", 0) }, manifest: m,
			initializing: "init container second (2 of 2) running",
			slots:        []string{"POD running", "init.first exited", "init.second running"}},
		{name: "both through: the app container starts", before: func() { exitSlot(t, fake, "init.second", 0) }, manifest: m,
			slots: []string{"POD running", "app running", "init.first exited", "init.second exited"}, settled: true},
		{name: "an app container stopped by hand starts again without them", before: func() { stopSlot(t, fake, "app") }, manifest: m,
			slots: []string{"POD running", "app running", "init.first exited", "init.second exited"}, settled: true},
		{name: "a changed init container runs them again before a new app container",
			manifest:     edit(initPod("web"), func(m *manifest.Manifest) { m.InitContainers[1].Command = []string{"second", "again"} }),
			initializing: "init container first (1 of 2) running",
			slots:        []string{"POD running", "init.first running", "init.second exited"}},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		r := initStep(t, fake, inits, st.manifest)
		if r.Err != nil {
			t.Fatalf("%s: %v", st.name, r.Err)
		}
		if r.Initializing != st.initializing {
			t.Errorf("%s: initializing %q, want %q", st.name, r.Initializing, st.initializing)
		}
		if got := slotsOf(t, fake); !slices.Equal(got, st.slots) {
			t.Errorf("%s: containers %v, want %v", st.name, got, st.slots)
		}
		if plan := hsync.MakePlan(pods(st.manifest), listed(t, fake), hsync.PlanOptions{}); st.settled && plan.Changed() {
			t.Errorf("%s: the next plan changes the pod: %v", st.name, renderPlan(plan))
		}
	}
}

func TestAFailedInitContainerFailsThePodThenRunsAgain(t *testing.T) {
	fake, inits, m := synctest.NewFake(), &hsync.InitRuns{}, initPod("web")
	if r := initStep(t, fake, inits, m); r.Err != nil || r.Initializing == "" {
		t.Fatalf("first apply: %v, initializing %q", r.Err, r.Initializing)
	}
	exitSlot(t, fake, "init.first", 3)
	r := initStep(t, fake, inits, m)
	var pe *hsync.PodError
	if r.Err == nil || !strings.Contains(r.Err.Error(), "init container first exited with code 3") {
		t.Fatalf("apply after the failure: %v, want the exit code", r.Err)
	} else if !errors.As(r.Err, &pe) || pe.Reason != hsync.ReasonInitFailed {
		t.Errorf("reason of %v, want %s", r.Err, hsync.ReasonInitFailed)
	}
	if got, want := slotsOf(t, fake), []string{"POD running", "init.first exited"}; !slices.Equal(got, want) {
		t.Errorf("after the failure: %v, want %v (no app container; the failed one kept for its logs)", got, want)
	}
	// The retry (the syncer's backoff passed) removes it and runs it anew.
	r = initStep(t, fake, inits, m)
	if r.Err != nil || r.Initializing != "init container first (1 of 2) running" {
		t.Fatalf("retry: %v, initializing %q", r.Err, r.Initializing)
	}
	if got, want := slotsOf(t, fake), []string{"POD running", "init.first running"}; !slices.Equal(got, want) {
		t.Errorf("after the retry: %v, want %v", got, want)
	}
}

func TestInitContainersGoneFromTheManifestAreRemoved(t *testing.T) {
	fake, inits := synctest.NewFake(), &hsync.InitRuns{}
	initStep(t, fake, inits, initPod("web"))
	exitSlot(t, fake, "init.first", 0)
	initStep(t, fake, inits, initPod("web"))
	exitSlot(t, fake, "init.second", 0)
	initStep(t, fake, inits, initPod("web"))

	m := initPod("web")
	m.InitContainers = m.InitContainers[:1]
	plan := renderPlan(hsync.MakePlan(pods(m), listed(t, fake), hsync.PlanOptions{}))
	if !slices.Contains(plan, "web/init.second remove: init container removed from the manifest") {
		t.Errorf("plan %v does not remove init.second", plan)
	}
	if slices.ContainsFunc(plan, func(l string) bool { return strings.HasPrefix(l, "web/init.first remove") }) {
		t.Errorf("plan %v removes init.first, still in the manifest", plan)
	}
}

// hostlet run --once converges a pod with init containers in one call:
// it waits for each to exit before the next, then starts the app.
func TestSyncOnceWaitsForInitContainers(t *testing.T) {
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: pods(initPod("web")), Ready: true})
	done := make(chan error, 1)
	go func() { done <- s.SyncOnce(t.Context()) }()
	for _, slot := range []string{"init.first", "init.second"} {
		var id string
		testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
			for _, c := range listed(t, fake) {
				if c.Slot() == slot && c.State == hruntime.StateRunning {
					id = c.ID
				}
			}
			return id != "", fmt.Sprintf("%s not running: %v", slot, slotsOf(t, fake))
		})
		if err := fake.Exit(id, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("SyncOnce: %v", err)
	}
	if got, want := slotsOf(t, fake), []string{"POD running", "app running", "init.first exited", "init.second exited"}; !slices.Equal(got, want) {
		t.Errorf("after SyncOnce: %v, want %v", got, want)
	}
}

// A changed init container recreates the app containers, saying which.
func TestAChangedInitContainerIsTheReasonOfTheRecreate(t *testing.T) {
	env := hsync.NewEnvHasher([]byte("key-a-0123456789abcdef0123456789"))
	fake := synctest.NewFake()
	opts := tableApplyOptions(env)
	opts.WaitInit = exitAtOnce{fake}
	plan0 := hsync.MakePlan(pods(onePodWithInit("first")), nil, hsync.PlanOptions{EnvHasher: env})
	for _, r := range hsync.Apply(t.Context(), fake, plan0, opts, slog.New(slog.DiscardHandler)) {
		if r.Err != nil || r.Initializing != "" {
			t.Fatalf("apply: %v, initializing %q", r.Err, r.Initializing)
		}
	}
	changed := onePodWithInit("first", "again")
	plan := renderPlan(hsync.MakePlan(pods(changed), listed(t, fake), hsync.PlanOptions{EnvHasher: env}))
	if !slices.Contains(plan, "web/app recreate: init container first changed") {
		t.Errorf("plan %v, want app recreated for init container first", plan)
	}
}

// onePodWithInit is pod web of one app container after init container
// first running command.
func onePodWithInit(command ...string) manifest.Manifest {
	m := onePod("web")
	m.InitContainers = []manifest.Container{{Name: "first", Image: "example.org/init:1", Command: command}}
	return m
}

// exitAtOnce is an InitWaiter whose init containers exit 0 as soon as
// they are waited for.
type exitAtOnce struct{ fake *synctest.Fake }

func (w exitAtOnce) Wait(ctx context.Context, id string) (int, error) {
	if err := w.fake.Exit(id, 0); err != nil {
		return 0, err
	}
	return w.fake.Wait(ctx, id)
}
