package sync_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// A container a recreate stopped and could not remove stays, stopped, in
// its slot beside its running successor (the pod is not failed for it),
// and the next pass removes it as the slot's older container, touching
// nothing else.
func TestReplacedContainerNotRemovedIsRemovedByTheNextPass(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	fake := converge(t, nil, pods(onePod("p")))
	rt := &faultyEngine{Fake: fake, method: "Remove", target: "p/app", err: errRefused}
	plan := hsync.MakePlan(pods(newImage), listed(t, fake), hsync.PlanOptions{Prune: true})
	for _, r := range hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("pod %s: %v, want its new version running (the old container's removal is not its failure)", r.ID, r.Err)
		}
	}
	cs := listed(t, fake)
	if len(cs) != 2 || slices.ContainsFunc(cs, func(c hruntime.Container) bool { return c.Image == "example.org/app:1" && c.Running() }) {
		t.Fatalf("containers %+v, want app:2 running beside app:1 stopped", cs)
	}
	plan = hsync.MakePlan(pods(newImage), cs, hsync.PlanOptions{Prune: true})
	if got := renderPlan(plan); !slices.Equal(got, []string{"p/app keep", "p/app remove: duplicate container for this slot"}) {
		t.Fatalf("plan %q, want the stopped container removed and the running one kept", got)
	}
	fake.Reset()
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if cs := listed(t, fake); len(cs) != 1 || cs[0].Image != "example.org/app:2" || !cs[0].Running() {
		t.Errorf("containers %+v, want app:2 alone, running", cs)
	}
}

// The engine lists creation times in whole seconds: of a slot's two
// containers created in the same second, whichever the list gives first,
// the running one is the slot's (a recreate cut short between its
// successor's start and its own removal), the stopped one goes.
func TestRunningContainerIsTheSlotsWhenCreatedInTheSameSecond(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	running := listed(t, converge(t, nil, pods(newImage)))[0]
	stopped := listed(t, converge(t, nil, pods(onePod("p"))))[0]
	stopped.ID, stopped.State = "old", hruntime.StateExited
	stopped.Created = running.Created
	for _, list := range [][]hruntime.Container{{running, stopped}, {stopped, running}} {
		plan := hsync.MakePlan(pods(newImage), slices.Clone(list), hsync.PlanOptions{Prune: true})
		got := renderPlan(plan)
		if !slices.Equal(got, []string{"p/app keep", "p/app remove: duplicate container for this slot"}) {
			t.Fatalf("listed %.12s first: plan %q, want the slot kept and its duplicate removed", list[0].ID, got)
		}
		if kept, gone := plan.Pods[0].Changes[0].Current.ID, plan.Pods[0].Changes[1].Current.ID; kept != running.ID || gone != stopped.ID {
			t.Errorf("listed %.12s first: kept %.12s, removed %.12s; want the running one kept", list[0].ID, kept, gone)
		}
	}
}

// A container kept stopped until its successor has started gets the
// restart policy none once stopped, and is stopped again (an engine
// restart between the stop and the change would have started it, policy
// always), all before its successor is created; an engine that cannot set
// it has the container removed before the successor is created, as
// before.
func TestReplacedContainerKeptOnlyWithoutRestartPolicy(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	for _, refuse := range []bool{false, true} {
		fake := converge(t, nil, pods(onePod("p")))
		before := listed(t, fake)
		rt := &faultyEngine{Fake: fake}
		if refuse {
			rt.method, rt.target, rt.err = "NoRestart", "p/app", errRefused
		}
		plan := hsync.MakePlan(pods(newImage), before, hsync.PlanOptions{Prune: true})
		for _, r := range hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
			if r.Err != nil {
				t.Fatalf("refused %v: pod %s: %v", refuse, r.ID, r.Err)
			}
		}
		want := []string{"EnsureImage(example.org/app:2)", "Stop(p/app)", "NoRestart(p/app)", "Stop(p/app)", "Create(p/app)", "Start(p/app)", "Remove(p/app)"}
		if refuse {
			// The refused call reaches no engine: it is not recorded.
			want = []string{"EnsureImage(example.org/app:2)", "Stop(p/app)", "Remove(p/app)", "Create(p/app)", "Start(p/app)"}
		}
		if got := renderCalls(fake.Calls(), before, listed(t, fake)); !slices.Equal(got, want) {
			t.Errorf("refused %v: calls %q, want %q", refuse, got, want)
		}
	}
}

// restartedBetween is the Fake engine restarted between a container's
// stop and the change of its restart policy: the container (policy
// always) runs again when the change arrives. It notes whether that
// container ran when another was started.
type restartedBetween struct {
	*synctest.Fake
	old string
	// ranBeside: the old container was running at another's start.
	ranBeside bool
}

func (e *restartedBetween) NoRestart(ctx context.Context, id string) error {
	if id == e.old {
		if err := e.Fake.Start(ctx, id); err != nil {
			return err
		}
	}
	return e.Fake.NoRestart(ctx, id)
}

func (e *restartedBetween) Start(ctx context.Context, id string) error {
	if id != e.old {
		cs, _ := e.Fake.List(ctx)
		e.ranBeside = e.ranBeside || slices.ContainsFunc(cs, func(c hruntime.Container) bool { return c.ID == e.old && c.Running() })
	}
	return e.Fake.Start(ctx, id)
}

// A container an engine restart started again between its stop and the
// change of its restart policy is stopped again before its successor
// starts, and removed after.
func TestReplacedContainerStartedAgainBeforeItsPolicyChangeIsStoppedBeforeItsSuccessorStarts(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	fake := converge(t, nil, pods(onePod("p")))
	before := listed(t, fake)
	rt := &restartedBetween{Fake: fake, old: before[0].ID}
	plan := hsync.MakePlan(pods(newImage), before, hsync.PlanOptions{Prune: true})
	for _, r := range hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("pod %s: %v", r.ID, r.Err)
		}
	}
	if rt.ranBeside {
		t.Error("the old container ran when its successor started")
	}
	if cs := listed(t, fake); len(cs) != 1 || cs[0].Image != "example.org/app:2" || !cs[0].Running() {
		t.Errorf("containers %+v, want app:2 alone, running", cs)
	}
}

// exitOnHook is the Fake engine where a container's preStop hook (an
// exec: `nginx -s quit`, `pg_ctl stop`) makes its process exit on its own,
// and the engine starts a container of policy always again (the exit was
// not a stop asked for through the API).
type exitOnHook struct {
	*synctest.Fake
	old string
	// cleared: the old container's policy was cleared; restarted counts
	// the engine's starts of it.
	cleared   bool
	restarted int
}

func (e *exitOnHook) NoRestart(ctx context.Context, id string) error {
	e.cleared = e.cleared || id == e.old
	return e.Fake.NoRestart(ctx, id)
}

func (e *exitOnHook) Exec(ctx context.Context, id string, cmd []string) (int, error) {
	code, err := e.Fake.Exec(ctx, id, cmd)
	if id == e.old {
		if err := e.Fake.Stop(ctx, id, 0); err != nil {
			return code, err
		}
		if !e.cleared {
			e.restarted++
			return code, e.Fake.Start(ctx, id)
		}
	}
	return code, err
}

// A container with a preStop hook has its restart policy cleared before
// the hook runs: a hook that makes its process exit (nginx -s quit) must
// not have the engine start the old version again mid-recreate.
func TestReplacedContainerWithAPreStopHookHasItsPolicyClearedBeforeTheHook(t *testing.T) {
	fake := converge(t, nil, pods(withQuitHook("example.org/app:1")))
	before := listed(t, fake)
	rt := &exitOnHook{Fake: fake, old: before[0].ID}
	plan := hsync.MakePlan(pods(withQuitHook("example.org/app:2")), before, hsync.PlanOptions{Prune: true})
	for _, r := range hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("pod %s: %v", r.ID, r.Err)
		}
	}
	if rt.restarted > 0 {
		t.Errorf("the engine started the old container again %d time(s) after its preStop hook made it exit", rt.restarted)
	}
	if cs := listed(t, fake); len(cs) != 1 || cs[0].Image != "example.org/app:2" || !cs[0].Running() {
		t.Errorf("containers %+v, want app:2 alone, running", cs)
	}
}

// A container with a preStop hook whose stop fails after its restart
// policy was cleared (the engine refuses it, or hostlet shuts down
// mid-hook and never sends it) runs on with its policy back: a revert
// would keep it, running, and touch it no more.
func TestContainerWhoseStopFailsAfterItsHookKeepsItsRestartPolicy(t *testing.T) {
	tests := []struct {
		name string
		rt   func(fake *synctest.Fake, cancel context.CancelFunc) hsync.Runtime
	}{
		{"the engine refuses the stop", func(fake *synctest.Fake, _ context.CancelFunc) hsync.Runtime {
			return &faultyEngine{Fake: fake, method: "Stop", target: "p/app", err: errRefused}
		}},
		{"hostlet shuts down during the hook", func(fake *synctest.Fake, cancel context.CancelFunc) hsync.Runtime {
			return &shutsDownInHook{Fake: fake, cancel: cancel}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := converge(t, nil, pods(withQuitHook("example.org/app:1")))
			old := listed(t, fake)[0]
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			plan := hsync.MakePlan(pods(withQuitHook("example.org/app:2")), listed(t, fake), hsync.PlanOptions{Prune: true})
			for _, r := range hsync.Apply(ctx, tt.rt(fake, cancel), plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
				if r.Err == nil {
					t.Fatalf("pod %s applied, want the failed stop's error", r.ID)
				}
			}
			if cs := listed(t, fake); len(cs) != 1 || cs[0].ID != old.ID || !cs[0].Running() {
				t.Fatalf("containers %+v, want the old one running on", cs)
			}
			if s, _ := fake.Spec(old.ID); s.RestartPolicy != hruntime.RestartAlways {
				t.Errorf("restart policy %q after the failed stop, want always", s.RestartPolicy)
			}
		})
	}
}

// shutsDownInHook is an engine where hostlet is told to stop (its context
// cancelled) while a container's preStop hook runs: the stop is never
// sent.
type shutsDownInHook struct {
	*synctest.Fake
	cancel context.CancelFunc
}

func (e *shutsDownInHook) Exec(ctx context.Context, id string, cmd []string) (int, error) {
	e.cancel()
	return e.Fake.Exec(ctx, id, cmd)
}

func (e *shutsDownInHook) Stop(ctx context.Context, id string, grace time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.Fake.Stop(ctx, id, grace)
}

// A container kept stopped for removal, its restart policy cleared, that
// is wanted again (hostlet killed before the removal, the change then
// reverted) is started with its policy back, so the engine restarts it
// after a crash, as it does every other; an engine that cannot set the
// policy (Podman before 5.1) has it started all the same.
func TestContainerKeptForRemovalAndWantedAgainGetsItsRestartPolicyBack(t *testing.T) {
	tests := []struct {
		name           string
		refuse         bool
		wantAfterCrash string
	}{
		{name: "policy set back", wantAfterCrash: hruntime.StateRunning},
		{name: "engine refuses the policy", refuse: true, wantAfterCrash: hruntime.StateExited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := converge(t, nil, pods(onePod("p")))
			kept := listed(t, fake)[0]
			if err := fake.NoRestart(t.Context(), kept.ID); err != nil {
				t.Fatal(err)
			}
			if err := fake.Stop(t.Context(), kept.ID, 0); err != nil {
				t.Fatal(err)
			}
			var rt hsync.Runtime = fake
			if tt.refuse {
				rt = &faultyEngine{Fake: fake, method: "RestoreRestart", target: "p/app", err: errRefused}
			}
			plan := hsync.MakePlan(pods(onePod("p")), listed(t, fake), hsync.PlanOptions{Prune: true})
			for _, r := range hsync.Apply(t.Context(), rt, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
				if r.Err != nil {
					t.Fatalf("pod %s: %v", r.ID, r.Err)
				}
			}
			if cs := listed(t, fake); len(cs) != 1 || cs[0].ID != kept.ID || !cs[0].Running() {
				t.Fatalf("containers %+v, want the kept one started again", cs)
			}
			if err := fake.Exit(kept.ID, 1); err != nil {
				t.Fatal(err)
			}
			if cs := listed(t, fake); cs[0].State != tt.wantAfterCrash {
				t.Errorf("after a crash the container is %s, want %s", cs[0].State, tt.wantAfterCrash)
			}
		})
	}
}

// withQuitHook is pod p of image img, its container's preStop hook an
// exec of `nginx -s quit`.
func withQuitHook(img string) manifest.Manifest {
	return edit(onePod("p"), func(m *manifest.Manifest) {
		m.Containers[0].Image = img
		m.Containers[0].Lifecycle = &manifest.Lifecycle{PreStop: &manifest.Hook{Exec: &manifest.Exec{Command: []string{"nginx", "-s", "quit"}}}}
	})
}

// A hostlet killed in a recreate, between clearing the old container's
// restart policy and its successor's creation, and started again once the
// change was reverted, finds the old container wanted again: a stopped
// one runs again, even where its exit (0, on SIGTERM) would pass for a
// completion to a pod of restartPolicy OnFailure, with its policy back;
// a running one keeps running and gets its policy back once a stop the
// engine might still carry out would have ended, and if that stop ends
// it first, it runs again. A container of that pod that completed on its
// own is not run again.
func TestContainerLeftByARecreateCutShortRunsWithItsPolicyOnceAdopted(t *testing.T) {
	onFailure := onFailurePod()
	clearPolicy := func(fake *synctest.Fake, id string) error { return fake.NoRestart(context.Background(), id) }
	tests := []struct {
		name string
		// leave puts the container as the killed hostlet left it;
		// meanwhile, when set, is what happens to it after the adopting
		// hostlet's first pass.
		leave, meanwhile func(fake *synctest.Fake, id string) error
		wantRunning      bool
		wantPolicy       string
		// wantCalls are the calls made to the container over the
		// adopting hostlet's two passes, a minute apart (meanwhile's
		// too), but its inspect.
		wantCalls []string
	}{
		{
			name: "stopped, its policy cleared",
			leave: func(fake *synctest.Fake, id string) error {
				return errors.Join(fake.Stop(context.Background(), id, 0), clearPolicy(fake, id))
			},
			wantRunning: true, wantPolicy: hruntime.RestartOnFailure, wantCalls: []string{"RestoreRestart", "Start"},
		},
		{
			name:        "running, its policy cleared",
			leave:       clearPolicy,
			wantRunning: true, wantPolicy: hruntime.RestartOnFailure, wantCalls: []string{"RestoreRestart"},
		},
		{
			name:        "running, its policy cleared, stopped by a stop the engine finishes after the adoption",
			leave:       clearPolicy,
			meanwhile:   func(fake *synctest.Fake, id string) error { return fake.Stop(context.Background(), id, 0) },
			wantRunning: true, wantPolicy: hruntime.RestartOnFailure, wantCalls: []string{"Stop", "RestoreRestart", "Start"},
		},
		{
			name:        "completed on its own",
			leave:       func(fake *synctest.Fake, id string) error { return fake.Exit(id, 0) },
			wantRunning: false, wantPolicy: hruntime.RestartOnFailure, wantCalls: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := synctest.NewFake()
			first := newFakeSyncer(t, fake)
			first.SetDesired(hsync.Desired{Pods: pods(onFailure), Ready: true})
			if err := first.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			old := listed(t, fake)[0]
			if err := tt.leave(fake, old.ID); err != nil {
				t.Fatal(err)
			}
			fake.Reset()
			clk := clock.NewFake(clockT0)
			second := newClockedFakeSyncer(t, fake, clk)
			second.SetDesired(hsync.Desired{Pods: pods(onFailure), Ready: true})
			if err := second.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tt.meanwhile != nil {
				if err := tt.meanwhile(fake, old.ID); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(time.Minute)
			if err := second.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			cs := listed(t, fake)
			if len(cs) != 1 || cs[0].ID != old.ID || cs[0].Running() != tt.wantRunning {
				t.Fatalf("containers %+v, want %.12s alone, running %v", cs, old.ID, tt.wantRunning)
			}
			if s, _ := fake.Spec(old.ID); s.RestartPolicy != tt.wantPolicy {
				t.Errorf("restart policy %q, want %q", s.RestartPolicy, tt.wantPolicy)
			}
			var calls []string
			for _, c := range fake.Calls() {
				if c.Arg == old.ID && c.Method != "Inspect" {
					calls = append(calls, c.Method)
				}
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", calls, tt.wantCalls)
			}
		})
	}
}

// onFailurePod is pod p of restartPolicy OnFailure (a job).
func onFailurePod() manifest.Manifest {
	return edit(onePod("p"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
}

// leftByACutRecreate converges pods on a new Fake with one hostlet, then
// leaves pod p's container as a hostlet killed mid-recreate does:
// stopped (exit 0), its restart policy cleared. It returns the engine
// and that container's ID.
func leftByACutRecreate(t *testing.T, desired []hsync.Pod) (*synctest.Fake, string) {
	t.Helper()
	fake := synctest.NewFake()
	first := newFakeSyncer(t, fake)
	first.SetDesired(hsync.Desired{Pods: desired, Ready: true})
	if err := first.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	id := listed(t, fake)[0].ID
	if err := errors.Join(fake.Stop(context.Background(), id, 0), fake.NoRestart(context.Background(), id)); err != nil {
		t.Fatal(err)
	}
	return fake, id
}

// startsOf counts the Start calls fake recorded of container id.
func startsOf(fake *synctest.Fake, id string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Arg == id && c.Method == "Start" {
			n++
		}
	}
	return n
}

// A container a recreate cut short left stopped runs again once; when it
// then completes on its own (a job of restartPolicy OnFailure, exit 0),
// it is done: later passes do not run it again.
func TestContainerStartedAgainAfterARecreateCutShortIsDoneOnceItCompletes(t *testing.T) {
	fake, id := leftByACutRecreate(t, pods(onFailurePod()))
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: pods(onFailurePod()), Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := fake.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	for pass := 1; pass <= 3; pass++ {
		fake.Reset()
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := startsOf(fake, id); n > 0 {
			t.Errorf("pass %d: the completed container was started %d time(s) again", pass, n)
		}
	}
}

// The container a recreate cut short left stopped is told by the restart
// policy it was created with, not by its pod's in the first desired set:
// a pod whose source delivers after hostlet's first pass has it run again
// too.
func TestContainerLeftByARecreateCutShortIsToldWhenItsPodComesLater(t *testing.T) {
	fake, id := leftByACutRecreate(t, pods(onFailurePod()))
	s := newFakeSyncer(t, fake)
	s.SetDesired(hsync.Desired{Ready: false}) // its source is not there yet
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Pods: pods(onFailurePod()), Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if cs := listed(t, fake); len(cs) != 1 || cs[0].ID != id || !cs[0].Running() {
		t.Errorf("containers %+v, want %.12s running", cs, id)
	}
	if spec, _ := fake.Spec(id); spec.RestartPolicy != hruntime.RestartOnFailure {
		t.Errorf("restart policy %q, want on-failure", spec.RestartPolicy)
	}
}

// A job that completed on its own (restartPolicy OnFailure, exit 0) keeps
// its restart policy when a recreate replaces it: a hostlet killed before
// its removal, the change then reverted, must not take it for a container
// the recreate stopped and run it again.
func TestCompletedJobReplacedKeepsItsRestartPolicy(t *testing.T) {
	fake := converge(t, nil, pods(onFailurePod()))
	old := listed(t, fake)[0]
	if err := fake.Exit(old.ID, 0); err != nil {
		t.Fatal(err)
	}
	v2 := edit(onFailurePod(), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	plan := hsync.MakePlan(pods(v2), listed(t, fake), hsync.PlanOptions{Prune: true})
	fake.Reset()
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("pod %s: %v", r.ID, r.Err)
		}
	}
	for _, c := range fake.Calls() {
		if c.Arg == old.ID && c.Method == "NoRestart" {
			t.Errorf("the completed job's restart policy was cleared (calls %v)", fake.Calls())
		}
	}
	if cs := listed(t, fake); len(cs) != 1 || cs[0].Image != "example.org/app:2" {
		t.Errorf("containers %+v, want app:2 alone", cs)
	}
}

// stopsThenShutsDown is an engine where hostlet is told to stop (its
// context cancelled) while a container's stop is under way: the engine
// finishes the stop (the app exits 0 on SIGTERM), the call returns the
// cancellation.
type stopsThenShutsDown struct {
	*synctest.Fake
	armed  bool
	cancel context.CancelFunc
}

func (e *stopsThenShutsDown) Stop(ctx context.Context, id string, grace time.Duration) error {
	if !e.armed {
		return e.Fake.Stop(ctx, id, grace)
	}
	e.armed = false
	_ = e.Fake.Stop(context.Background(), id, grace)
	e.cancel()
	return ctx.Err()
}

// A pod of restartPolicy OnFailure whose recreate hostlet leaves during
// the old container's stop (the app exits 0) has that container run
// again once the change is reverted: its policy was cleared before the
// stop, so its exit does not pass for a completion. So for a container
// kept until its successor starts and for one removed first (a pod with
// an infra container).
func TestOnFailurePodLeftDuringARecreateStopRunsAgainOnceReverted(t *testing.T) {
	tests := []struct {
		name string
		// pod makes the pod anew each time (edit shares its containers).
		pod func() manifest.Manifest
	}{
		{"kept until its successor starts", onFailurePod},
		{"removed before its successor is created", func() manifest.Manifest {
			return edit(twoPod("p"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &stopsThenShutsDown{Fake: synctest.NewFake()}
			first := newFakeSyncer(t, eng)
			first.SetDesired(hsync.Desired{Pods: pods(tt.pod()), Ready: true})
			if err := first.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			before := slotIDs(t, eng.Fake)
			v2 := edit(tt.pod(), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
			ctx, cancel := context.WithCancel(t.Context())
			eng.armed, eng.cancel = true, cancel
			first.SetDesired(hsync.Desired{Pods: pods(v2), Ready: true})
			_ = first.SyncOnce(ctx) // hostlet stops mid-recreate
			first.Close()
			second := newFakeSyncer(t, eng.Fake)
			second.SetDesired(hsync.Desired{Pods: pods(tt.pod()), Ready: true})
			if err := second.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			cs := listed(t, eng.Fake)
			if after := slotIDs(t, eng.Fake); !maps.Equal(after, before) || slices.ContainsFunc(cs, func(c hruntime.Container) bool { return !c.Running() }) {
				t.Errorf("containers %+v, want the ones before the recreate (%v) running again", cs, before)
			}
			if spec, _ := eng.Spec(before["app"]); spec.RestartPolicy != hruntime.RestartOnFailure {
				t.Errorf("restart policy %q, want on-failure", spec.RestartPolicy)
			}
		})
	}
}

// A pod of restartPolicy OnFailure whose container joins another pod's
// network (networkOf) is stopped by the holder's recreate, its policy
// cleared first: a hostlet stopped during that stop (the app exits 0 on
// SIGTERM), started again once the holder's change is reverted, runs
// the joiner again rather than take its exit 0 for a completion.
func TestOnFailureJoinerStoppedByItsHoldersRecreateRunsAgainOnceReverted(t *testing.T) {
	job := func() manifest.Manifest {
		return edit(joiner("t", "vpn"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
	}
	eng := &stopsThenShutsDown{Fake: synctest.NewFake()}
	first := newFakeSyncer(t, eng)
	first.SetDesired(hsync.Desired{Pods: pods(onePod("vpn"), job()), Ready: true})
	if err := first.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := first.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	cs := listed(t, eng.Fake)
	joined := cs[slotIndex(t, cs, "t/app")]
	if !joined.Running() {
		t.Fatalf("t not running: %+v", joined)
	}
	v2 := edit(onePod("vpn"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	ctx, cancel := context.WithCancel(t.Context())
	eng.armed, eng.cancel = true, cancel
	first.SetDesired(hsync.Desired{Pods: pods(v2, job()), Ready: true})
	_ = first.SyncOnce(ctx) // hostlet stops during the joiner's stop
	first.Close()

	second := newFakeSyncer(t, eng.Fake)
	second.SetDesired(hsync.Desired{Pods: pods(onePod("vpn"), job()), Ready: true}) // reverted
	for range 2 {
		if err := second.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cs = listed(t, eng.Fake)
	if c := cs[slotIndex(t, cs, "t/app")]; !c.Running() {
		t.Errorf("joiner t %s (%s), policy %q: stopped by hostlet, taken for a completed job, never run again",
			c.State, c.Status, policyOf(eng.Fake, c.ID))
	}
}

// A pod of restartPolicy OnFailure whose containers rejoin the pod's
// network (the infra container restarted after them) is stopped and
// started again, its policy cleared before the stop and put back before
// the start: a hostlet stopped between the two (the app exits 0 on
// SIGTERM) leaves the next one a container it runs again, not a
// completed job.
func TestOnFailurePodRestartedToRejoinItsNetworkAndCutMidStopRunsAgain(t *testing.T) {
	job := func() manifest.Manifest {
		return edit(twoPod("p"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
	}
	now := time.Unix(1_700_000_000, 0)
	eng := &stopsThenShutsDown{Fake: synctest.NewFake()}
	eng.SetClock(func() time.Time { return now })
	first := newFakeSyncer(t, eng)
	first.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true})
	if err := first.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	// The engine restarted the infra container after the app containers
	// started (its process crashed while hostlet was down).
	now = now.Add(time.Minute)
	infra := slotIDs(t, eng.Fake)[hruntime.InfraName]
	if err := eng.Fake.Exit(infra, 137); err != nil { // policy always: started again
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	eng.armed, eng.cancel = true, cancel
	second := newFakeSyncer(t, eng)
	second.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true})
	_ = second.SyncOnce(ctx) // recovery: app's stop, then hostlet stops
	second.Close()
	app := slotIDs(t, eng.Fake)["app"]

	now = now.Add(time.Minute)
	third := newFakeSyncer(t, eng.Fake)
	third.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true}) // nothing reverted
	for range 2 {
		if err := third.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cs := listed(t, eng.Fake)
	for _, c := range cs {
		if c.ID == app && !c.Running() {
			t.Errorf("app %s (%s), policy %q: hostlet's own rejoin stop taken for a completed job; the pod stays down",
				c.State, c.Status, policyOf(eng.Fake, c.ID))
		}
	}
}

// policyOf is the restart policy fake holds for container id.
func policyOf(fake *synctest.Fake, id string) string {
	spec, _ := fake.Spec(id)
	return spec.RestartPolicy
}

// A pod of restartPolicy OnFailure removed from its source, whose
// container hostlet stopped (its policy cleared first) and the engine
// would not remove, then put back while the same hostlet runs, runs
// again: as a restarted hostlet would have it.
func TestOnFailureContainerWhoseRemovalFailedRunsAgainWhenWantedAgain(t *testing.T) {
	job := func() manifest.Manifest {
		return edit(twoPod("p"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
	}
	j := runJob(t, job())
	rt, clk, s := j.rt, j.clk, j.s
	rt.method, rt.target, rt.err = "Remove", "p/app", errRefused
	s.SetDesired(hsync.Desired{Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil {
		t.Fatal("the pod's removal succeeded, want the engine's refusal")
	}
	rt.method = ""
	s.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true})
	clk.Advance(time.Hour) // past the failed removal's backoff
	j.wantRunningAgain(t)
}

// jobRun is a pod of restartPolicy OnFailure run by a Syncer on a fake
// clock, on the Fake behind rt; app is its app container's ID.
type jobRun struct {
	fake *synctest.Fake
	rt   *faultyEngine
	clk  *clock.Fake
	s    *hsync.Syncer
	app  string
}

func runJob(t *testing.T, m manifest.Manifest) jobRun {
	t.Helper()
	j := jobRun{fake: synctest.NewFake(), clk: clock.NewFake(clockT0)}
	j.rt = &faultyEngine{Fake: j.fake}
	j.s = newClockedFakeSyncer(t, j.rt, j.clk)
	j.s.SetDesired(hsync.Desired{Pods: pods(m), Ready: true})
	if err := j.s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	j.app = slotIDs(t, j.fake)["app"]
	return j
}

// wantRunningAgain runs a pass and wants the job's app container
// running again, its policy on-failure.
func (j jobRun) wantRunningAgain(t *testing.T) {
	t.Helper()
	if err := j.s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, ok := runningSlot(j.fake, "p", "app"); !ok || c.ID != j.app {
		t.Errorf("app: running %v, container %.12s, want %.12s running again", ok, c.ID, j.app)
	}
	if p := policyOf(j.fake, j.app); p != hruntime.RestartOnFailure {
		t.Errorf("restart policy %q, want on-failure", p)
	}
}

// newClockedFakeSyncer is newFakeSyncer's Syncer on clock clk.
func newClockedFakeSyncer(t *testing.T, rt hsync.FullRuntime, clk *clock.Fake) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(rt, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour,
		Concurrency: 4, Prune: true, StateDir: t.TempDir(), Clock: clk}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// A liveness restart of a container of restartPolicy OnFailure that the
// engine will not start again after its stop (the app exited 0 on
// SIGTERM) leaves it to the next pass, which starts it with its policy
// back rather than take its exit 0 for a completion.
func TestOnFailureContainerWhoseLivenessRestartFailedToStartRunsAgain(t *testing.T) {
	j := runJob(t, onFailurePod())
	j.rt.method, j.rt.target, j.rt.err = "Start", "p/app", errRefused
	j.s.OnUnhealthy(t.Context(), "p", "app", j.app)
	if c, ok := runningSlot(j.fake, "p", "app"); ok {
		t.Fatalf("container %+v runs, want it stopped by the failed restart", c)
	}
	j.rt.method = ""
	j.clk.Advance(time.Minute)
	j.wantRunningAgain(t)
}

// A liveness restart of a container of restartPolicy OnFailure whose
// policy the engine does not set back before its start leaves it running
// marked, and the next pass sets the policy, so an engine restarts it
// after a crash again.
func TestOnFailureContainerLivenessRestartedWithoutItsPolicyGetsItNextPass(t *testing.T) {
	j := runJob(t, onFailurePod())
	j.rt.method, j.rt.target, j.rt.err = "RestoreRestart", "p/app", errRefused
	j.s.OnUnhealthy(t.Context(), "p", "app", j.app)
	if c, ok := runningSlot(j.fake, "p", "app"); !ok || c.ID != j.app {
		t.Fatalf("app: running %v, want %.12s restarted", ok, j.app)
	}
	if p := policyOf(j.fake, j.app); p != hruntime.RestartNo {
		t.Fatalf("restart policy %q after the failed restore, want none", p)
	}
	j.rt.method = ""
	j.clk.Advance(time.Minute)
	j.wantRunningAgain(t)
}

// A job (restartPolicy OnFailure) restarted to rejoin its pod's network,
// its policy cleared for the stop, keeps no mark once started again: when
// it then completes on its own (exit 0), it is done.
func TestJobRestartedToRejoinItsNetworkIsDoneOnceItCompletes(t *testing.T) {
	job := func() manifest.Manifest {
		return edit(twoPod("p"), func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure })
	}
	now := time.Unix(1_700_000_000, 0)
	fake := synctest.NewFake()
	fake.SetClock(func() time.Time { return now })
	first := newFakeSyncer(t, fake)
	first.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true})
	if err := first.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	now = now.Add(time.Minute)
	infra := slotIDs(t, fake)[hruntime.InfraName]
	if err := fake.Exit(infra, 137); err != nil {
		t.Fatal(err)
	}
	second := newFakeSyncer(t, fake)
	second.SetDesired(hsync.Desired{Pods: pods(job()), Ready: true})
	if err := second.SyncOnce(t.Context()); err != nil { // rejoin: app stopped and started
		t.Fatal(err)
	}
	app := slotIDs(t, fake)["app"]
	if c, ok := runningSlot(fake, "p", "app"); !ok || c.ID != app {
		t.Fatalf("app not running after the rejoin")
	}
	now = now.Add(time.Minute)
	if err := fake.Exit(app, 0); err != nil { // the job completes
		t.Fatal(err)
	}
	fake.Reset()
	if err := second.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := startsOf(fake, app); n > 0 {
		t.Errorf("the completed job was started %d time(s) again", n)
	}
}

// A job (restartPolicy OnFailure) whose liveness restart succeeded keeps
// no mark: when it then completes on its own (exit 0), it is done.
func TestJobRestartedForItsLivenessIsDoneOnceItCompletes(t *testing.T) {
	j := runJob(t, onFailurePod())
	j.s.OnUnhealthy(t.Context(), "p", "app", j.app)
	if _, ok := runningSlot(j.fake, "p", "app"); !ok {
		t.Fatal("not running after the liveness restart")
	}
	if err := j.fake.Exit(j.app, 0); err != nil {
		t.Fatal(err)
	}
	j.clk.Advance(time.Minute)
	j.fake.Reset()
	if err := j.s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := startsOf(j.fake, j.app); n > 0 {
		t.Errorf("the completed job was started %d time(s) again", n)
	}
}

// failsHooks is an engine where every exec (a postStart hook) fails.
type failsHooks struct{ *synctest.Fake }

func (e failsHooks) Exec(ctx context.Context, id string, cmd []string) (int, error) {
	_, err := e.Fake.Exec(ctx, id, cmd)
	return 1, err
}

// A job (restartPolicy OnFailure) stopped because its postStart hook
// failed, its policy cleared first, is tried again after its backoff:
// its exit 0 on SIGTERM does not pass for a completion.
func TestJobStoppedForAFailedPostStartHookIsTriedAgain(t *testing.T) {
	m := edit(onFailurePod(), func(m *manifest.Manifest) {
		m.Containers[0].Lifecycle = &manifest.Lifecycle{PostStart: &manifest.Hook{Exec: &manifest.Exec{Command: []string{"false"}}}}
	})
	fake := synctest.NewFake()
	clk := clock.NewFake(clockT0)
	s := newClockedFakeSyncer(t, failsHooks{fake}, clk)
	s.SetDesired(hsync.Desired{Pods: pods(m), Ready: true})
	_ = s.SyncOnce(t.Context()) // postStart fails: stopped
	app := slotIDs(t, fake)["app"]
	for range 3 {
		clk.Advance(time.Hour) // past any backoff
		fake.Reset()
		_ = s.SyncOnce(t.Context())
		if startsOf(fake, app) > 0 {
			return // tried again
		}
	}
	t.Errorf("the container stopped by its failed postStart hook (exit 0, policy %q) was never tried again", policyOf(fake, app))
}

// hookFailsStopRefused is an engine where every exec (a postStart hook)
// fails and every stop is refused.
type hookFailsStopRefused struct{ failsHooks }

func (e hookFailsStopRefused) Stop(context.Context, string, time.Duration) error { return errRefused }

// A job (restartPolicy OnFailure) whose postStart hook failed and whose
// stop the engine then refused runs on with its restart policy back.
func TestJobWhoseStopAfterAFailedPostStartIsRefusedKeepsItsPolicy(t *testing.T) {
	m := edit(onFailurePod(), func(m *manifest.Manifest) {
		m.Containers[0].Lifecycle = &manifest.Lifecycle{PostStart: &manifest.Hook{Exec: &manifest.Exec{Command: []string{"false"}}}}
	})
	fake := synctest.NewFake()
	s := newClockedFakeSyncer(t, hookFailsStopRefused{failsHooks{fake}}, clock.NewFake(clockT0))
	s.SetDesired(hsync.Desired{Pods: pods(m), Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil {
		t.Fatal("the pod applied, want its postStart hook's failure")
	}
	app := slotIDs(t, fake)["app"]
	if c, ok := runningSlot(fake, "p", "app"); !ok || c.ID != app {
		t.Fatalf("app: running %v, want it running on (its stop was refused)", ok)
	}
	if p := policyOf(fake, app); p != hruntime.RestartOnFailure {
		t.Errorf("restart policy %q, want on-failure", p)
	}
}
