package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
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
	changed := edit(initPod("web"), func(m *manifest.Manifest) { m.InitContainers[1].Command = []string{"second", "again"} })
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
		{name: "a changed init container runs them again, the running app container serving meanwhile",
			manifest: changed, initializing: "init container first (1 of 2) running",
			slots: []string{"POD running", "app running", "init.first running", "init.second exited"}},
		{name: "the first of the new run through: the second runs anew", before: func() { exitSlot(t, fake, "init.first", 0) }, manifest: changed,
			initializing: "init container second (2 of 2) running",
			slots:        []string{"POD running", "app running", "init.first exited", "init.second running"}},
		{name: "the new run through: the app container is replaced", before: func() { exitSlot(t, fake, "init.second", 0) }, manifest: changed,
			slots: []string{"POD running", "app running", "init.first exited", "init.second exited"}, settled: true},
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

// exitingInits is a fake engine whose init containers exit with code as
// soon as they are waited for (hostlet run --once), counting the runs.
type exitingInits struct {
	*synctest.Fake
	mu   gosync.Mutex
	code int
	runs int
}

func (e *exitingInits) Wait(ctx context.Context, id string) (int, error) {
	e.mu.Lock()
	e.runs++
	code := e.code
	e.mu.Unlock()
	if err := e.Fake.Exit(id, code); err != nil {
		return 0, err
	}
	return e.Fake.Wait(ctx, id)
}

func initPodYAML(id string) string {
	return "version: v1beta1\nid: " + id + "\ninitContainers: [{name: setup, image: example.org/init:1}]\ncontainers: [{name: app, image: example.org/app:1}]\n"
}

// A dependency's condition is its app containers': its exited init
// containers do not hold a pod depending on it back.
func TestAPodDependingOnAPodWithInitContainersStarts(t *testing.T) {
	s := newFakeSyncer(t, &exitingInits{Fake: synctest.NewFake()})
	web := decodePod(t, "version: v1beta1\nid: web\ndependsOn: [{pod: db}]\ncontainers: [{name: app, image: example.org/web:1}]\n")
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, initPodYAML("db")), web}, Ready: true})
	for range 3 {
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if st := statusOf(s, "web"); st.Phase != hsync.PhaseRunning {
		t.Errorf("web, depending on db (running): %s %s %q", st.Phase, st.Reason, st.Message)
	}
}

// hostlet run --once, a process of its own each time, runs a failed init
// container again each time (no backoff to wait for).
func TestRunOnceRunsAFailedInitContainerAgain(t *testing.T) {
	fake := &exitingInits{Fake: synctest.NewFake(), code: 1}
	pod := decodePod(t, initPodYAML("web"))
	first := newFakeSyncer(t, fake)
	first.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := first.SyncOnce(t.Context()); err == nil || !strings.Contains(err.Error(), "init container setup exited with code 1") {
		t.Fatalf("first run: %v, want the init container's failure", err)
	}
	first.Close()
	fake.mu.Lock()
	fake.code = 0
	fake.mu.Unlock()
	second := newFakeSyncer(t, fake)
	second.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := second.SyncOnce(t.Context()); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if st := statusOf(second, "web"); st.Phase != hsync.PhaseRunning || fake.runs != 2 {
		t.Errorf("after the second run: %s, %d init runs; want Running after 2", st.Phase, fake.runs)
	}
}

// A pod of one app container after init containers whose infra container
// is lost is repaired at once, even in a closed maintenance window, as a
// pod of several app containers is: its app container runs in a network
// namespace that is gone.
func TestALostInfraContainerOfAPodWithInitContainersIsRepairedAtOnce(t *testing.T) {
	fake := &exitingInits{Fake: synctest.NewFake()}
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second, Concurrency: 4, Prune: true, StateDir: t.TempDir(),
		Window: func(time.Time) (bool, time.Time, time.Time) { return false, time.Time{}, time.Time{} },
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, initPodYAML("web"))}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range listed(t, fake.Fake) {
		if c.Slot() == hruntime.InfraName {
			if err := fake.Remove(t.Context(), c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := slotsOf(t, fake.Fake); !slices.Contains(got, "POD running") || !slices.Contains(got, "app running") {
		t.Errorf("after the infra container was lost, in a closed window: %v, want the pod repaired", got)
	}
}

// A changed pod whose infra container runs and stays runs its new init
// containers before anything is taken down: one that fails leaves the
// running version serving.
func TestAFailingInitContainerLeavesTheRunningVersion(t *testing.T) {
	fake := &exitingInits{Fake: synctest.NewFake()}
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, initPodYAML("web"))}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	app := func() hruntime.Container {
		for _, c := range listed(t, fake.Fake) {
			if c.Slot() == "app" {
				return c
			}
		}
		return hruntime.Container{}
	}
	before := app()
	fake.mu.Lock()
	fake.code = 2
	fake.mu.Unlock()
	changed := strings.Replace(initPodYAML("web"), "example.org/init:1", "example.org/init:2", 1)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, changed)}, Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil || !strings.Contains(err.Error(), "exited with code 2") {
		t.Fatalf("sync: %v, want the init container's failure", err)
	}
	if after := app(); after.ID != before.ID || after.State != hruntime.StateRunning {
		t.Errorf("app container %s %s after a failed init container, want %s running", after.ID, after.State, before.ID)
	}
}

// An init container in a state no sync moves on (paused) is run anew.
func TestAPausedInitContainerIsRunAgain(t *testing.T) {
	fake, inits, m := synctest.NewFake(), &hsync.InitRuns{}, initPod("web")
	initStep(t, fake, inits, m)
	list := listed(t, fake)
	for i := range list {
		if list[i].Slot() == "init.first" {
			list[i].State = hruntime.StatePaused
		}
	}
	plan := hsync.MakePlan(pods(m), list, hsync.PlanOptions{})
	opts := tableApplyOptions(nil)
	opts.Inits = inits
	r := hsync.Apply(t.Context(), fake, plan, opts, slog.New(slog.DiscardHandler))
	if len(r) != 1 || r[0].Err != nil || r[0].Initializing != "init container first (1 of 2) running" {
		t.Fatalf("apply: %+v", r)
	}
	if n := len(slices.DeleteFunc(listed(t, fake), func(c hruntime.Container) bool { return c.Slot() != "init.first" })); n != 1 {
		t.Errorf("%d init.first containers, want the paused one replaced by one", n)
	}
}

// A pod that restarts nothing (restartPolicy Never, a Job) whose init
// container failed fails for good, as in Kubernetes.
func TestAFailedInitContainerOfANeverRestartingPodIsNotRunAgain(t *testing.T) {
	fake, inits := synctest.NewFake(), &hsync.InitRuns{}
	m := initPod("job")
	m.RestartPolicy = manifest.RestartNever
	initStep(t, fake, inits, m)
	exitSlot(t, fake, "init.first", 1)
	for range 3 {
		if r := initStep(t, fake, inits, m); r.Err == nil || !strings.Contains(r.Err.Error(), "init container first exited with code 1") {
			t.Fatalf("apply: %v, want the failure", r.Err)
		}
	}
	if got, want := slotsOf(t, fake), []string{"POD running", "init.first exited"}; !slices.Equal(got, want) {
		t.Errorf("containers %v, want %v (not run again)", got, want)
	}
}
