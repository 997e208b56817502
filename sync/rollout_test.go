package sync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
	"github.com/hostlet/hostlet/validate"
)

const rolloutPodFmt = `
version: v1beta1
id: %s
minReadySeconds: 10
progressDeadlineSeconds: 60
rollback: %s
containers:
  - name: app
    image: "%s"
%s`

// readinessNeverPasses is a readiness probe that fails on the fake.
const readinessNeverPasses = `    readinessProbe: {type: exec, exec: {command: ["false"]}}
`

// rolloutEnv is a Syncer on the Fake engine with a fake clock, synced by
// hand (SyncOnce); the engine's events are fed to it as Run would.
type rolloutEnv struct {
	t      *testing.T
	fake   *synctest.Fake
	clk    *clock.Fake
	dir    string
	window func(time.Time) (bool, time.Time, time.Time)
	// hostPaths are the host's policy (hostPathAllow).
	hostPaths validate.Options
	s         *hsync.Syncer
	ev        *eventlog.Log
	evs       <-chan hruntime.Event
	ctx       context.Context
	cancel    context.CancelFunc
}

func newRolloutEnv(t *testing.T, window func(time.Time) (bool, time.Time, time.Time)) *rolloutEnv {
	e := &rolloutEnv{t: t, fake: synctest.NewFake(), clk: clock.NewFake(time.Now()), dir: t.TempDir(), window: window}
	e.fake.SetClock(e.clk.Now)
	e.start()
	return e
}

// start makes a Syncer on the env's engine and stateDir (again: a
// restarted hostlet).
func (e *rolloutEnv) start() {
	if e.cancel != nil {
		e.cancel()
		e.s.Close()
	}
	e.ctx, e.cancel = context.WithCancel(e.t.Context())
	e.ev = eventlog.NewLog(100)
	s, err := hsync.New(e.fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: e.clk,
		StateDir: e.dir, Window: e.window, HostPaths: e.hostPaths,
	}, slog.New(slog.DiscardHandler), e.ev)
	if err != nil {
		e.t.Fatal(err)
	}
	e.s = s
	e.evs = e.fake.Events(e.ctx)
	e.t.Cleanup(func() {
		e.cancel()
		s.Close()
	})
}

func (e *rolloutEnv) set(pods ...hsync.Pod) { e.s.SetDesired(hsync.Desired{Pods: pods, Ready: true}) }

func (e *rolloutEnv) pod(id, revision, image, policy, extra string) hsync.Pod {
	p := decodePod(e.t, fmt.Sprintf(rolloutPodFmt, id, policy, image, extra))
	p.Revision = revision
	return p
}

func (e *rolloutEnv) sync(advance time.Duration) {
	e.t.Helper()
	e.clk.Advance(advance)
	_ = e.s.SyncOnce(e.ctx)
}

// app is the app container of pod id the engine has ("" ID when none).
func (e *rolloutEnv) app(id string) hruntime.Container {
	cs, _ := e.fake.List(e.ctx)
	for _, c := range cs {
		if c.Pod() == id && c.Slot() == "app" {
			return c
		}
	}
	return hruntime.Container{}
}

// crash makes pod id's app container exit n times; the engine restarts
// it each time (restartPolicy Always) and the syncer is told, as Run
// tells it.
func (e *rolloutEnv) crash(id string, n int) {
	e.t.Helper()
	for range n {
		c := e.app(id)
		if err := e.fake.Exit(c.ID, 1); err != nil {
			e.t.Fatal(err)
		}
		e.feed()
	}
}

// feed feeds every event the engine sent so far to the syncer: up to a
// marker sent after them.
func (e *rolloutEnv) feed() {
	e.t.Helper()
	e.fake.Emit(hruntime.Event{Action: "test-marker"})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.evs:
			if ev.Action == "test-marker" {
				return
			}
			e.s.HandleEvent(e.ctx, ev)
		case <-deadline:
			e.t.Fatal("the engine's events did not arrive")
		}
	}
}

func (e *rolloutEnv) status(id string) hsync.PodStatus {
	for _, p := range e.s.Report().Pods {
		if p.ID == id {
			return p
		}
	}
	return hsync.PodStatus{}
}

// want checks pod id's rollout state (and a substring of its reason) and
// the image its app container runs.
func (e *rolloutEnv) want(step, id, state, reason, image string) {
	e.t.Helper()
	st := e.status(id)
	if st.Rollout == nil || st.Rollout.State != state || !strings.Contains(st.Rollout.Reason, reason) {
		e.t.Fatalf("%s: pod %s rollout %+v, want state %s, reason containing %q", step, id, st.Rollout, state, reason)
	}
	if c := e.app(id); c.Image != image {
		e.t.Fatalf("%s: pod %s runs %q (%s), want %s", step, id, c.Image, c.State, image)
	}
}

func (e *rolloutEnv) creates() int { return countMethod(e.fake, "Create") }

func countMethod(fake *synctest.Fake, method string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

func (e *rolloutEnv) eventsOf(typ string) []eventlog.Event {
	var out []eventlog.Event
	for _, ev := range e.ev.List() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// complete syncs until pod id's rollout is Complete: ready once, then
// minReadySeconds later.
func (e *rolloutEnv) complete(id, image string) {
	e.t.Helper()
	e.sync(time.Second)
	e.sync(11 * time.Second)
	e.want("complete", id, hsync.RolloutComplete, "", image)
}

// TestRolloutOnFake plays every transition of a rollout through the
// Syncer on the Fake engine, one step after another, each a row: a new
// pod progresses and completes; a crash-looping version is rolled back,
// restored and held back (for minutes of syncs and across a restart)
// until a later version comes; a version never ready is rolled back at
// its deadline and not before; rollback: Never leaves it failing; a new
// pod that fails has nothing to return to.
func TestRolloutOnFake(t *testing.T) {
	e := newRolloutEnv(t, nil)
	web := func(rev, image, policy, extra string) func() {
		return func() { e.set(e.pod("web", rev, image, policy, extra)) }
	}
	var creates int
	steps := []struct {
		name string
		do   func()
		// advance is the fake time before the sync that follows do.
		advance            time.Duration
		pod, state, reason string
		image              string
		check              func(t *testing.T)
	}{
		{name: "a new pod progresses", do: web("r1", "example.org/app:1", "Auto", ""),
			pod: "web", state: hsync.RolloutProgressing, image: "example.org/app:1"},
		{name: "ready: minReadySeconds counts", advance: time.Second,
			pod: "web", state: hsync.RolloutProgressing, reason: "complete after 10s ready", image: "example.org/app:1"},
		{name: "ready minReadySeconds: complete", advance: 11 * time.Second,
			pod: "web", state: hsync.RolloutComplete, image: "example.org/app:1"},
		{name: "a change progresses", do: web("r2", "example.org/app:2", "Auto", ""), advance: time.Second,
			pod: "web", state: hsync.RolloutProgressing, image: "example.org/app:2",
			check: func(t *testing.T) {
				if r := e.status("web").Rollout; r.PreviousHash == "" || r.PreviousHash == r.Hash {
					t.Errorf("rollout %+v, want the previous version's hash", r)
				}
			}},
		{name: "a crash loop rolls back", do: func() { e.crash("web", 3) }, advance: time.Second,
			pod: "web", state: hsync.RolloutRolledBack, reason: "keeps crashing", image: "example.org/app:2",
			check: func(t *testing.T) {
				if rb := e.eventsOf(eventlog.Rollback); len(rb) != 1 || rb[0].Pod != "web" || !strings.Contains(rb[0].Reason, "keeps crashing") {
					t.Errorf("rollback events %+v, want one for web", rb)
				}
				if n := e.s.Rollbacks()["web"]; n != 1 {
					t.Errorf("rollbacks of web: %d, want 1", n)
				}
			}},
		{name: "the last ready version is restored", advance: time.Second,
			pod: "web", state: hsync.RolloutRolledBack, reason: "keeps crashing", image: "example.org/app:1",
			check: func(t *testing.T) {
				st := e.status("web")
				if st.Phase != hsync.PhasePending && st.Phase != hsync.PhaseRunning || st.Revision != "r1" || st.Rollout.Revision != "r2" {
					t.Errorf("restored pod: phase %s revision %s rollout revision %s, want r1 running with r2 held back", st.Phase, st.Revision, st.Rollout.Revision)
				}
				if st.LastAction == nil || !strings.HasPrefix(st.LastAction.Reason, "rollback to the last ready version; image example.org/app:2 -> 1") {
					t.Errorf("restored pod's last action %+v, want the rollback as its reason", st.LastAction)
				}
				// The images held back, for `hostlet images` not to move to them again.
				if got := st.Rollout.Images; len(got) != 1 || got["app"] != "example.org/app:2" {
					t.Errorf("rollout images %v, want app: example.org/app:2 (the version held back)", got)
				}
				creates = e.creates()
			}},
		{name: "not retried for minutes of syncs", do: func() {
			for range 10 {
				e.sync(time.Minute)
			}
		}, pod: "web", state: hsync.RolloutRolledBack, image: "example.org/app:1"},
		{name: "nor after a restart", do: func() {
			e.start()
			e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
			e.sync(time.Second)
		}, advance: time.Minute, pod: "web", state: hsync.RolloutRolledBack, reason: "keeps crashing", image: "example.org/app:1",
			check: func(t *testing.T) {
				if n := e.creates() - creates; n != 0 {
					t.Errorf("%d creates after the rollback, want none", n)
				}
			}},
		{name: "a later commit is applied", do: web("r3", "example.org/app:3", "Auto", ""), advance: time.Second,
			pod: "web", state: hsync.RolloutProgressing, image: "example.org/app:3"},
		{name: "and completes", do: func() { e.sync(time.Second) }, advance: 11 * time.Second,
			pod: "web", state: hsync.RolloutComplete, image: "example.org/app:3"},
		{name: "never ready: not rolled back before its deadline", do: func() {
			web("r4", "example.org/app:4", "Auto", readinessNeverPasses)()
			e.sync(time.Second)
		}, advance: 58 * time.Second,
			pod: "web", state: hsync.RolloutProgressing, reason: "readiness probe not passing", image: "example.org/app:4"},
		{name: "never ready: rolled back at its deadline", advance: 2 * time.Second,
			pod: "web", state: hsync.RolloutRolledBack, reason: "not ready within progressDeadlineSeconds (1m0s): container app: readiness probe not passing", image: "example.org/app:4"},
		{name: "never ready: restored", advance: time.Second,
			pod: "web", state: hsync.RolloutRolledBack, image: "example.org/app:3"},
		{name: "rollback: Never leaves it failing", do: func() {
			web("r5", "example.org/app:5", "Never", "")()
			e.sync(time.Second)
			e.crash("web", 3)
		}, advance: time.Second,
			pod: "web", state: hsync.RolloutProgressing, reason: "(rollback: Never)", image: "example.org/app:5",
			check: func(t *testing.T) {
				if st := e.status("web"); st.Phase != hsync.PhaseFailed || st.Reason != hsync.ReasonCrashLoop {
					t.Errorf("web %s %s, want Failed CrashLoopBackOff", st.Phase, st.Reason)
				}
			}},
		{name: "and stays", advance: time.Minute,
			pod: "web", state: hsync.RolloutProgressing, reason: "(rollback: Never)", image: "example.org/app:5"},
		{name: "a new pod that fails has nothing to return to", do: func() {
			e.set(e.pod("web", "r5", "example.org/app:5", "Never", ""), e.pod("api", "r5", "example.org/api:1", "Auto", ""))
			e.sync(time.Second)
			e.crash("api", 3)
		}, advance: time.Second,
			pod: "api", state: hsync.RolloutProgressing, reason: "no earlier ready version", image: "example.org/api:1"},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		e.sync(st.advance)
		e.want(st.name, st.pod, st.state, st.reason, st.image)
		if st.check != nil {
			st.check(t)
		}
	}
}

// TestRolloutIsNotCompletedByARestartItsEventHasNotShown: a version
// crashing at once, restarted by the engine between two syncs that both
// saw it running, is not ready for minReadySeconds even when the engine's
// start event has not reached hostlet yet (its event stream lags under
// load): the start time the engine reports counts.
func TestRolloutIsNotCompletedByARestartItsEventHasNotShown(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.sync(time.Second)
	e.want("ready", "web", hsync.RolloutProgressing, "complete after 10s ready", "example.org/app:1")

	// A second later it crashed and the engine restarted it; the events
	// stay unread.
	e.clk.Advance(time.Second)
	if err := e.fake.Exit(e.app("web").ID, 1); err != nil {
		t.Fatal(err)
	}
	e.sync(10 * time.Second)
	e.want("restarted since it was seen ready", "web", hsync.RolloutProgressing, "complete after 10s ready", "example.org/app:1")

	e.feed()
	e.sync(11 * time.Second)
	e.want("ready minReadySeconds since the restart", "web", hsync.RolloutComplete, "", "example.org/app:1")
	if n := countMethod(e.fake, "Inspect"); n != 2 {
		t.Errorf("%d inspects, want 2: one on each sync that could complete the rollout", n)
	}
	e.fake.Reset()
	e.sync(11 * time.Second)
	if n := countMethod(e.fake, "Inspect"); n != 0 {
		t.Errorf("%d inspects in a sync of a complete rollout, want none", n)
	}
}

// TestRolloutHoldPolicy: a failed update of a pod with rollback: Hold
// holds the pod as it is, until an operator releases it.
func TestRolloutHoldPolicy(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Hold", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	e.set(e.pod("web", "r2", "example.org/app:2", "Hold", ""))
	e.sync(time.Second)
	e.crash("web", 3)
	e.sync(time.Second)
	e.want("r2 failed", "web", hsync.RolloutHeld, "update failed: container app keeps crashing", "example.org/app:2")
	if st := e.status("web"); st.Rollout.Hold == nil || st.Rollout.Hold.By != "hostlet" {
		t.Fatalf("hold %+v, want one by hostlet", st.Rollout.Hold)
	}
	if err := e.s.Release("web"); err != nil {
		t.Fatal(err)
	}
	e.sync(time.Second)
	e.want("released", "web", hsync.RolloutProgressing, "", "example.org/app:2")
}

// TestOperatorHold: a held pod keeps its container through a manifest
// change and after being stopped by hand; the hold survives a restart;
// on release the pod converges.
func TestOperatorHold(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	id := e.app("web").ID
	if _, err := e.s.Hold(e.ctx, "web", "alice", "debugging\x1b[31m"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Hold(e.ctx, "../web", "alice", ""); err == nil {
		t.Fatal("a hold of a pod ID with a path in it was taken")
	}
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	st := e.status("web")
	if st.Rollout == nil || st.Rollout.State != hsync.RolloutHeld || st.Rollout.Hold.By != "alice" || st.Rollout.Reason != "debugging [31m" {
		t.Fatalf("held pod rollout %+v, want Held by alice for debugging (control characters replaced)", st.Rollout)
	}
	if st.Reason != hsync.ReasonHeld || !strings.Contains(st.Message, "app recreate (image example.org/app:1 -> 2)") {
		t.Fatalf("held pod reason %s message %q, want Held saying what waits", st.Reason, st.Message)
	}
	// Stopped by hand: not started again, also after a restart.
	if err := e.fake.Stop(e.ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	e.sync(time.Minute)
	e.start()
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Minute)
	if c := e.app("web"); c.ID != id || c.State != hruntime.StateExited {
		t.Fatalf("held pod's container %s %s, want %s left exited", c.ID, c.State, id)
	}
	// Not removed either when no source declares it.
	e.set()
	e.sync(time.Second)
	if c := e.app("web"); c.ID != id {
		t.Fatalf("held pod's container pruned")
	}
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	if err := e.s.Release("web"); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Release("web"); err == nil {
		t.Fatal("a second release found a hold")
	}
	e.sync(time.Second)
	e.want("released", "web", hsync.RolloutProgressing, "", "example.org/app:2")
	if c := e.app("web"); c.State != hruntime.StateRunning {
		t.Fatalf("released pod %s, want running", c.State)
	}
}

// TestMaintenanceWindow: outside a window a recreate waits while a new
// pod starts; Force applies it.
func TestMaintenanceWindow(t *testing.T) {
	open := true
	next := time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC)
	e := newRolloutEnv(t, func(time.Time) (bool, time.Time, time.Time) { return open, next, time.Time{} })
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	open = false
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""), e.pod("api", "r2", "example.org/api:1", "Auto", ""))
	e.sync(time.Second)
	if c := e.app("web"); c.Image != "example.org/app:1" || c.State != hruntime.StateRunning {
		t.Fatalf("web %s %s in a closed window, want app:1 running", c.Image, c.State)
	}
	if c := e.app("api"); c.State != hruntime.StateRunning {
		t.Fatalf("new pod api %q in a closed window, want it started", c.State)
	}
	st := e.status("web")
	if st.Reason != hsync.ReasonWindow || !strings.Contains(st.Message, "opens 2030-01-01T02:00:00Z") {
		t.Fatalf("waiting pod: reason %s message %q, want it waiting for the window", st.Reason, st.Message)
	}
	if w := e.s.Report().Window; w == nil || w.Open || !w.Next.Equal(next) {
		t.Fatalf("window %+v, want closed until %v", w, next)
	}
	e.s.Force()
	e.sync(time.Second)
	if c := e.app("web"); c.Image != "example.org/app:2" {
		t.Fatalf("web runs %s after a forced sync, want app:2", c.Image)
	}
	// The force ends (after two sync intervals: two hours here).
	e.set(e.pod("web", "r3", "example.org/app:3", "Auto", ""), e.pod("api", "r2", "example.org/api:1", "Auto", ""))
	e.sync(3 * time.Hour)
	if c := e.app("web"); c.Image != "example.org/app:2" {
		t.Fatalf("web runs %s after the force ended, want app:2 waiting", c.Image)
	}
}

// TestRolloutPullFailureIsNoRollback: a new version whose image cannot be
// pulled leaves the old version running untouched: no rollback, no
// deadline (the pod is Failed, ErrImagePull, retried with backoff), and
// the version is applied once the image comes.
func TestRolloutPullFailureIsNoRollback(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	e.fake.FailPull("example.org/app:2", errors.New("registry down"))
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.sync(10 * time.Minute)
	e.want("pull fails", "web", hsync.RolloutProgressing, "", "example.org/app:1")
	if st := e.status("web"); st.Phase != hsync.PhaseFailed || st.Reason != hsync.ReasonPull {
		t.Fatalf("web %s %s, want Failed ErrImagePull", st.Phase, st.Reason)
	}
	if rb := e.eventsOf(eventlog.Rollback); len(rb) != 0 {
		t.Fatalf("rollbacks %+v, want none", rb)
	}
	e.fake.FailPull("example.org/app:2", nil)
	e.sync(10 * time.Minute)
	e.want("image there", "web", hsync.RolloutProgressing, "", "example.org/app:2")
	e.complete("web", "example.org/app:2")
}

// TestRollbackKeepsDependencyOrder: when a commit breaks a pod and the
// pod it depends on, both are rolled back, the dependency first: the
// dependent pod's restore waits until the dependency's restore runs.
func TestRollbackKeepsDependencyOrder(t *testing.T) {
	e := newRolloutEnv(t, nil)
	const dependsOnDB = "dependsOn: [{pod: db}]\n"
	pods := func(rev, v string) {
		db := e.pod("db", rev, "example.org/db:"+v, "Auto", "")
		web := decodePod(t, fmt.Sprintf(strings.Replace(rolloutPodFmt, "containers:", dependsOnDB+"containers:", 1), "web", "Auto", "example.org/web:"+v, ""))
		web.Revision = rev
		e.set(db, web)
	}
	pods("r1", "1")
	e.sync(0)
	e.sync(time.Second) // web waited for db to start
	e.sync(time.Second)
	e.sync(11 * time.Second)
	e.want("db r1", "db", hsync.RolloutComplete, "", "example.org/db:1")
	e.want("web r1", "web", hsync.RolloutComplete, "", "example.org/web:1")

	pods("r2", "2")
	e.sync(time.Second)
	e.sync(time.Second)
	e.want("db r2", "db", hsync.RolloutProgressing, "", "example.org/db:2")
	e.want("web r2", "web", hsync.RolloutProgressing, "", "example.org/web:2")
	e.crash("db", 3)
	e.crash("web", 3)
	e.sync(time.Second)
	e.want("db rolled back", "db", hsync.RolloutRolledBack, "keeps crashing", "example.org/db:2")
	e.want("web rolled back", "web", hsync.RolloutRolledBack, "keeps crashing", "example.org/web:2")
	e.sync(time.Second)
	e.want("db restored first", "db", hsync.RolloutRolledBack, "", "example.org/db:1")
	e.want("web waits for db", "web", hsync.RolloutRolledBack, "", "example.org/web:2")
	if st := e.status("web"); !strings.Contains(st.Message, "pod db") {
		t.Fatalf("web %s %s %q, want it waiting for db", st.Phase, st.Reason, st.Message)
	}
	e.sync(time.Second)
	e.want("then web", "web", hsync.RolloutRolledBack, "", "example.org/web:1")
}

// TestRolloutCompletesAfterReleaseAndRevert: a pod released from a hold
// with no change, and a pod whose manifest reverts to the version that
// runs, complete again (they are not stuck Progressing).
func TestRolloutCompletesAfterReleaseAndRevert(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	if _, err := e.s.Hold(e.ctx, "web", "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.sync(time.Second)
	if err := e.s.Release("web"); err != nil {
		t.Fatal(err)
	}
	e.sync(time.Second)
	e.complete("web", "example.org/app:1")

	// r2 crashes and is rolled back; r3 reverts to r1's manifest.
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.crash("web", 3)
	e.sync(time.Second)
	e.sync(time.Second)
	e.want("r2 rolled back", "web", hsync.RolloutRolledBack, "", "example.org/app:1")
	e.set(e.pod("web", "r3", "example.org/app:1", "Auto", ""))
	e.sync(time.Second)
	e.complete("web", "example.org/app:1")
}

// stopGate is the Fake engine with the stops of one pod's containers held
// until released; entered is sent on once, at the first of them.
type stopGate struct {
	*synctest.Fake
	pod     string
	entered chan struct{}
	release chan struct{}
	once    gosync.Once
}

func (g *stopGate) Stop(ctx context.Context, id string, timeout time.Duration) error {
	cs, _ := g.Fake.List(ctx)
	for _, c := range cs {
		if c.ID == id && c.Pod() == g.pod {
			g.once.Do(func() { g.entered <- struct{}{} })
			<-g.release
		}
	}
	return g.Fake.Stop(ctx, id, timeout)
}

// TestHoldDuringASync: a hold taken while a sync is under way holds: a
// pod the sync has not reached yet is left as it is, and a hold of the
// pod being changed returns once that change has ended (never while it
// runs).
func TestHoldDuringASync(t *testing.T) {
	for _, tt := range []struct {
		name, gate string
		// changed: web's change, under way when the hold is taken, ends.
		changed bool
	}{
		{name: "a pod not reached yet", gate: "aaa", changed: false},
		{name: "the pod being changed", gate: "web", changed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := synctest.NewFake()
			gate := &stopGate{Fake: fake, pod: tt.gate, entered: make(chan struct{}), release: make(chan struct{})}
			s, err := hsync.New(gate, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: t.TempDir(), Concurrency: 1},
				slog.New(slog.DiscardHandler), eventlog.NewLog(100))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			ctx := t.Context()
			pods := func(v string) {
				s.SetDesired(hsync.Desired{Ready: true, Pods: []hsync.Pod{
					decodePod(t, fmt.Sprintf(pullPodFmt, "aaa", "example.org/aaa:"+v)),
					decodePod(t, fmt.Sprintf(pullPodFmt, "web", "example.org/web:"+v)),
				}})
			}
			pods("1")
			if err := s.SyncOnce(ctx); err != nil {
				t.Fatal(err)
			}
			pods("2")
			synced := make(chan error, 1)
			go func() { synced <- s.SyncOnce(ctx) }()
			<-gate.entered // the sync is stopping a container of the gated pod
			// What web runs (a container it replaced may still be there,
			// stopped, until the pass removes it).
			webImage := func() string {
				cs, _ := fake.List(ctx)
				for _, c := range cs {
					if c.Pod() == "web" && c.Running() {
						return c.Image
					}
				}
				return ""
			}
			held := make(chan string, 1)
			go func() {
				if _, err := s.Hold(ctx, "web", "alice", "incident"); err != nil {
					t.Error(err)
				}
				held <- webImage()
			}()
			// The hold is taken (its event recorded) before the stop ends.
			testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
				for _, p := range s.Report().Pods {
					if p.ID == "web" && p.Rollout != nil && p.Rollout.State == hsync.RolloutHeld {
						return true, ""
					}
				}
				return false, "web not held yet"
			})
			close(gate.release)
			atReturn := <-held
			if err := <-synced; err != nil {
				t.Fatal(err)
			}
			want := "example.org/web:1"
			if tt.changed {
				want = "example.org/web:2"
			}
			if atReturn != want || webImage() != want {
				t.Fatalf("web ran %q when Hold returned and %q after the sync, want %q", atReturn, webImage(), want)
			}
		})
	}
}

// TestRollbackNotAllowedAnyMore: when the host's policy no longer allows
// the last ready version, a rollback does not restore it; the status
// says so and the new version stays.
func TestRollbackNotAllowedAnyMore(t *testing.T) {
	e := newRolloutEnv(t, nil)
	allowed := t.TempDir()
	e.hostPaths = validate.Options{HostPathAllow: []string{allowed}}
	e.start()
	withHostPath := "  - name: app\n    image: \"%s\"\n    volumeMounts: [{name: data, mountPath: /data}]\n"
	pod := func(rev, image string) hsync.Pod {
		y := fmt.Sprintf("version: v1beta1\nid: web\nvolumes: [{name: data, hostPath: %q}]\ncontainers:\n"+withHostPath, allowed, image)
		if image == "example.org/app:2" {
			// The new version mounts nothing from the host.
			y = fmt.Sprintf(rolloutPodFmt, "web", "Auto", image, "")
		}
		p := decodePod(t, y)
		p.Revision = rev
		return p
	}
	e.set(pod("r1", "example.org/app:1"))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	e.set(pod("r2", "example.org/app:2"))
	e.sync(time.Second)
	e.hostPaths = validate.Options{} // the host's policy changes
	e.start()
	e.set(pod("r2", "example.org/app:2"))
	e.sync(time.Second)
	e.crash("web", 3)
	e.sync(time.Second)
	e.sync(time.Second)
	e.want("not restored", "web", hsync.RolloutRolledBack, "the last ready version is not allowed on this host any more, so the new version stays", "example.org/app:2")
}

// A version rolled back stays known after the manifest changes (a
// revert): the status lists it under rolledBackBefore, across a restart,
// so that `hostlet images` does not propose it again.
func TestRolledBackVersionsAreRememberedPastARevert(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.crash("web", 3)
	e.sync(time.Second)
	e.want("crash loop", "web", hsync.RolloutRolledBack, "keeps crashing", "example.org/app:2")
	e.set(e.pod("web", "r3", "example.org/app:1", "Auto", ""))
	e.sync(time.Second)
	for _, restarted := range []bool{false, true} {
		if restarted {
			e.start()
			e.sync(time.Second)
		}
		r := e.status("web").Rollout
		if r == nil || len(r.RolledBackBefore) != 1 || r.RolledBackBefore[0].Revision != "r2" || r.RolledBackBefore[0].Images["app"] != "example.org/app:2" {
			t.Fatalf("restarted %v: rollout %+v, want r2 (example.org/app:2) rolled back before", restarted, r)
		}
	}
}
