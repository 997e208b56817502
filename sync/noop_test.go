package sync_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// fakePods returns n desired pods for the fake engine: every third one has
// two containers (and so an infra container) and an empty-dir volume.
func fakePods(t testing.TB, n int, tag string) []hsync.Pod {
	t.Helper()
	pods := make([]hsync.Pod, 0, n)
	for i := range n {
		y := fmt.Sprintf(`
version: v1beta1
id: pod-%03d
containers:
  - name: app
    image: example.org/app:%s
    env: [{name: IDX, value: "%d"}]
    ports: [{containerPort: 8080, hostPort: %d}]
`, i, tag, i, 20000+i)
		if i%3 == 0 {
			y += `    volumeMounts: [{name: data, mountPath: /data}]
  - name: side
    image: example.org/side:1
    volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
volumes:
  - name: data
`
		}
		pods = append(pods, decodePod(t, y))
	}
	return pods
}

func newFakeSyncer(t testing.TB, rt hsync.FullRuntime) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(rt, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second,
		Concurrency: 4, Prune: true, StateDir: t.TempDir(),
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Must show 8 (unit): a no-op sync of 50 pods costs exactly one list call
// and no other engine call.
func TestNoopSyncIsOneListCall(t *testing.T) {
	fake := synctest.NewFake()
	counting := synctest.NewCounting(fake)
	s := newFakeSyncer(t, counting)
	pods := fakePods(t, 50, "1")
	s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	list, _ := fake.List(t.Context())
	if want := 50 + 2*17; len(list) != want { // 17 pods with a side and an infra container
		t.Fatalf("%d containers after the first sync, want %d", len(list), want)
	}
	if counting.Counts()["Create"] != len(list) {
		t.Errorf("first sync: calls %v, want %d creates", counting.Counts(), len(list))
	}

	for round := range 3 {
		fake.Reset()
		counting.Reset()
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := counting.Counts(); !reflect.DeepEqual(got, map[string]int{"List": 1}) {
			t.Errorf("no-op sync %d: calls %v, want exactly one List", round, got)
		}
		if got := fake.Calls(); !slices.Equal(got, []synctest.Call{{Method: "List"}}) {
			t.Errorf("no-op sync %d: fake saw %v, want exactly one List", round, got)
		}
	}
	for _, p := range s.Report().Pods {
		if p.Phase != hsync.PhaseRunning {
			t.Errorf("pod %s: phase %s", p.ID, p.Phase)
		}
	}

	// A container stopped by hand (the engine does not restart it) is
	// started again: two lists (before and after applying), its restart
	// policy set back (a recreate may have cleared it) and one start.
	i := slices.IndexFunc(list, func(c hruntime.Container) bool { return c.Pod() == "pod-001" && c.Slot() == "app" })
	if err := fake.Stop(t.Context(), list[i].ID, 0); err != nil {
		t.Fatal(err)
	}
	counting.Reset()
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := counting.Counts(); got["List"] != 2 || got["RestoreRestart"] != 1 || got["Start"] != 1 || counting.Total() != 4 {
		t.Errorf("sync restarting one stopped container: calls %v, want 2 List, 1 RestoreRestart and 1 Start", got)
	}
}

// Counting must count every method of FullRuntime: a method it did not
// override would pass through the embedded interface uncounted.
func TestCountingCountsEveryMethod(t *testing.T) {
	c := synctest.NewCounting(synctest.NewFake())
	typ := reflect.TypeFor[hsync.FullRuntime]()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		fn := reflect.ValueOf(c).MethodByName(m.Name)
		args := make([]reflect.Value, fn.Type().NumIn())
		for j := range args {
			in := fn.Type().In(j)
			if in == reflect.TypeFor[context.Context]() {
				args[j] = reflect.ValueOf(ctx)
			} else {
				args[j] = reflect.Zero(in)
			}
		}
		fn.Call(args)
		if got := c.Counts()[m.Name]; got != 1 {
			t.Errorf("%s: counted %d calls, want 1", m.Name, got)
		}
	}
	if c.Total() != typ.NumMethod() {
		t.Errorf("total %d, want %d", c.Total(), typ.NumMethod())
	}
}

// A die event for a container hostlet stopped itself (a recreate here) is
// not a crash: no restart is counted. A real crash afterwards is.
func TestOwnStopIsNotACrash(t *testing.T) {
	fake := synctest.NewFake()
	ev := eventlog.NewLog(100)
	s, err := hsync.New(fake, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Concurrency: 1},
		slog.New(slog.DiscardHandler), ev)
	if err != nil {
		t.Fatal(err)
	}
	const manifestFmt = `
version: v1beta1
id: web
containers:
  - {name: app, image: "example.org/app:1", env: [{name: A, value: "%s"}]}
`
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(manifestFmt, "1"))}, Ready: true})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var first hruntime.Container
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		list, _ := fake.List(ctx)
		if len(list) != 1 || list[0].State != hruntime.StateRunning {
			return false, fmt.Sprintf("containers %+v", list)
		}
		first = list[0]
		return true, ""
	})

	// Recreate: hostlet stops the old container (the fake sends its die
	// event, exit code 0, as the engine does).
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{decodePod(t, fmt.Sprintf(manifestFmt, "2"))}, Ready: true})
	var second hruntime.Container
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		list, _ := fake.List(ctx)
		if len(list) != 1 || list[0].ID == first.ID || list[0].State != hruntime.StateRunning {
			return false, fmt.Sprintf("containers %+v", list)
		}
		second = list[0]
		return true, ""
	})
	// Then the new container crashes and the engine restarts it. Once
	// that crash is recorded, the earlier die event has been handled too.
	if err := fake.Exit(second.ID, 3); err != nil {
		t.Fatal(err)
	}
	restartEvents := func() []string {
		var out []string
		for _, e := range ev.List() {
			if e.Type == eventlog.Restart {
				out = append(out, e.Reason)
			}
		}
		return out
	}
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		return slices.Contains(restartEvents(), "exited (3)"), fmt.Sprintf("restart events %q", restartEvents())
	})
	if got := restartEvents(); !slices.Equal(got, []string{"exited (3)"}) {
		t.Errorf("restart events %q, want only the crash", got)
	}
	if p := s.Report().Pods[0]; p.Containers[0].Restarts != 1 {
		t.Errorf("restarts = %d, want 1: the recreate's stop is not a crash", p.Containers[0].Restarts)
	}
}

// Must show 9 (plan): MakePlan of 10, 100 and 1000 pods against the
// containers the engine lists once they run, changing nothing (no-op) or
// every pod (all-changed: a new image for every app container).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		pods := fakePods(b, n, "1")
		actual, err := synctest.Converged("bench", "example.org/pause:1", pods)
		if err != nil {
			b.Fatal(err)
		}
		changedPods := fakePods(b, n, "2")
		for _, bc := range []struct {
			name    string
			desired []hsync.Pod
			changed bool
		}{{"no-op", pods, false}, {"all-changed", changedPods, true}} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, bc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					plan := hsync.MakePlan(bc.desired, actual, hsync.PlanOptions{Prune: true})
					if plan.Changed() != bc.changed {
						b.Fatalf("plan changed = %v, want %v", plan.Changed(), bc.changed)
					}
				}
			})
		}
	}
}
