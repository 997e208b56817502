package sync_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// builtPod is pod web with container app built from a context holding
// one file of content msg, with build arg VERSION=arg.
func builtPod(t *testing.T, msg, arg string) hsync.Pod {
	t.Helper()
	files := map[string]string{"Dockerfile": "FROM scratch\nARG VERSION\nCOPY msg.txt /msg.txt\n", "msg.txt": msg}
	f := buildctx.NewListFolder([]string{"Dockerfile", "msg.txt"}, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
	c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "web", Args: map[string]string{"VERSION": arg}}}
	if err := buildctx.Resolve("web", &c, "web", f); err != nil {
		t.Fatal(err)
	}
	m := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{c}}
	return hsync.NewPod(m.WithDefaults(), "test", "rev-"+msg)
}

// TestBuiltImages on the fake engine: a container with a build is built
// once (outside the sync; SyncOnce waits), a sync with nothing changed
// builds nothing, a changed context file builds once more and recreates
// the container with the file named; a failing build fails the pod with
// BuildFailed, keeps the running container, and never shows the build
// arg; old images are pruned to the newest two.
func TestBuiltImages(t *testing.T) {
	fake := synctest.NewFake()
	counting := synctest.NewCounting(fake)
	clk := clock.NewFake(clockT0)
	s, err := hsync.New(counting, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk, StateDir: t.TempDir()}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	sync := func(p hsync.Pod) {
		t.Helper()
		s.SetDesired(hsync.Desired{Pods: []hsync.Pod{p}, Ready: true})
		if err := s.SyncOnce(ctx); err != nil && !strings.Contains(err.Error(), "BuildFailed") {
			t.Fatal(err)
		}
	}
	const secretArg = "arg-secret-value-77"
	v1 := builtPod(t, "one", secretArg)
	sync(v1)
	if n := counting.Counts()["Build"]; n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
	list, _ := fake.List(ctx)
	if len(list) != 1 || list[0].Image != v1.Manifest.Containers[0].Image || list[0].State != "running" {
		t.Fatalf("containers %+v, want one running %s", list, v1.Manifest.Containers[0].Image)
	}
	first := list[0].ID

	counting.Reset()
	sync(v1)
	if got := counting.Counts(); !slices.Equal([]int{got["List"], counting.Total()}, []int{1, 1}) {
		t.Errorf("a sync with nothing changed made calls %v, want one List", got)
	}

	v2 := builtPod(t, "two", secretArg)
	sync(v2)
	if n := counting.Counts()["Build"]; n != 1 {
		t.Errorf("%d builds after a changed file, want 1", n)
	}
	st, _ := podStatus(s, "web")
	if st.LastAction == nil || st.LastAction.Reason != "context file msg.txt changed" {
		t.Errorf("last action %+v, want the reason 'context file msg.txt changed'", st.LastAction)
	}
	list, _ = fake.List(ctx)
	if len(list) != 1 || list[0].ID == first {
		t.Fatalf("containers %+v: web was not recreated", list)
	}
	running := list[0].ID

	v3 := builtPod(t, "three", secretArg)
	fake.FailBuild(v3.Manifest.Containers[0].Image, errors.New("COPY failed: msg.txt: "+secretArg))
	sync(v3)
	st, _ = podStatus(s, "web")
	if st.Phase != hsync.PhaseFailed || st.Reason != hsync.ReasonBuild || !strings.Contains(st.Message, "COPY failed") {
		t.Errorf("status %s/%s %q, want Failed/BuildFailed with the engine's message", st.Phase, st.Reason, st.Message)
	}
	list, _ = fake.List(ctx)
	if len(list) != 1 || list[0].ID != running || list[0].State != "running" {
		t.Errorf("containers %+v: the running version did not stay", list)
	}
	raw, _ := json.Marshal(s.Report())
	if strings.Contains(string(raw), secretArg) {
		t.Errorf("the status shows the build arg's value:\n%s", raw)
	}

	// Older images: the newest two (here: v2's, running, and v4's) stay.
	fake.FailBuild(v3.Manifest.Containers[0].Image, nil)
	clk.Advance(10 * time.Minute) // past the backoff
	sync(v3)
	sync(builtPod(t, "four", secretArg))
	if got := fake.Built(); len(got) > 2 || slices.Contains(got, v1.Manifest.Containers[0].Image) {
		t.Errorf("built images left %q, want at most two, v1's pruned", got)
	}
}

// engineLikeFake is the fake engine that, as the real one does, refuses
// to create a container of a built image that is not there (any more).
type engineLikeFake struct {
	*synctest.Fake
}

func (f engineLikeFake) Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	if buildctx.IsBuilt(spec.Image) && !slices.Contains(f.Built(), spec.Image) {
		return "", fmt.Errorf("create container %s: no such image %s: %w", spec.Name, spec.Image, hruntime.ErrNotFound)
	}
	return f.Fake.Create(ctx, spec)
}

// multiBuiltPod is pod id with n containers, each built from its own
// context folder.
func multiBuiltPod(t *testing.T, id string, n int, rev string) hsync.Pod {
	t.Helper()
	m := manifest.Manifest{Version: manifest.Version, ID: id}
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		files := map[string]string{"Dockerfile": "FROM scratch\nCOPY msg.txt /msg.txt\n", "msg.txt": name + " " + rev}
		f := buildctx.NewListFolder([]string{"Dockerfile", "msg.txt"}, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
		c := manifest.Container{Name: name, Build: &manifest.Build{Context: name}}
		if err := buildctx.Resolve(id, &c, name, f); err != nil {
			t.Fatal(err)
		}
		m.Containers = append(m.Containers, c)
	}
	return hsync.NewPod(m.WithDefaults(), "test", rev)
}

// TestBuiltImagePruneKeepsAPodUpdateRunning (issue 15 review): a pod of
// three containers that are each built: pruning keeps "the newest two"
// images of the POD, not of each container (sync/build.go pruneBuilt), and
// an image the pod is about to use is used by no container yet, so the
// third build of an update removes the first new image. The update then
// takes the running version down and fails to create the new one
// (CreateContainerError): the pod is down until the backoff ends and the
// pruned image is built again. (The first deployment of such a pod fails
// the same way once.)
func TestBuiltImagePruneKeepsAPodUpdateRunning(t *testing.T) {
	fake := engineLikeFake{synctest.NewFake()}
	counting := synctest.NewCounting(fake)
	clk := clock.NewFake(clockT0)
	s, err := hsync.New(counting, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk, StateDir: t.TempDir(), BuildConcurrency: 1}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	running := func() int {
		list, _ := fake.List(t.Context())
		n := 0
		for _, c := range list {
			if c.State == hruntime.StateRunning && c.Pod() == "trio" && buildctx.IsBuilt(c.Image) {
				n++
			}
		}
		return n
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{multiBuiltPod(t, "trio", 3, "r1")}, Ready: true})
	for i := 0; i < 5 && running() < 3; i++ {
		err := s.SyncOnce(t.Context())
		t.Logf("first deployment, sync %d: %v", i, err)
		clk.Advance(10 * time.Minute) // past the backoff
	}
	if running() != 3 {
		t.Fatalf("r1 never ran")
	}
	counting.Reset()
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{multiBuiltPod(t, "trio", 3, "r2")}, Ready: true})
	err = s.SyncOnce(t.Context())
	st, _ := podStatus(s, "trio")
	if n := running(); n != 3 {
		t.Errorf("after the update's sync (%v) %d of 3 containers run (builds %d, images left %q); pod %s/%s %q",
			err, n, counting.Counts()["Build"], fake.Built(), st.Phase, st.Reason, st.Message)
	}
}

// blockingBuilder is the fake engine whose builds wait until their
// context ends (a RUN step that hangs), or until release is closed (then
// they fail), counting the ones that started.
type blockingBuilder struct {
	*synctest.Fake
	release chan struct{} // nil: never
	mu      gosync.Mutex
	started []string
}

func (b *blockingBuilder) Build(ctx context.Context, spec hruntime.BuildSpec) (hruntime.BuildResult, error) {
	b.mu.Lock()
	b.started = append(b.started, spec.Tags[0])
	b.mu.Unlock()
	select {
	case <-ctx.Done():
		return hruntime.BuildResult{Duration: time.Second}, fmt.Errorf("build image %s: %w", spec.Tags[0], ctx.Err())
	case <-b.release:
		return hruntime.BuildResult{Duration: time.Second}, fmt.Errorf("build image %s: %w: released", spec.Tags[0], hruntime.ErrBuild)
	}
}

// startedBuilds are the images whose builds started, in order.
func (b *blockingBuilder) startedBuilds() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.started)
}

// TestTimedOutBuildIsToldToOnBuild (issue 15 review): a build that
// outlasts sync.buildTimeout fails the pod (BuildFailed) but is never told
// to OnBuild: hostlet_build_failures_total and
// hostlet_build_duration_seconds miss exactly the builds that hang.
func TestTimedOutBuildIsToldToOnBuild(t *testing.T) {
	fake := &blockingBuilder{Fake: synctest.NewFake()}
	var mu gosync.Mutex
	var told []error
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: t.TempDir(),
		BuildTimeout: 200 * time.Millisecond,
		OnBuild: func(_ time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, err)
		},
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{builtPod(t, "hang", "v")}, Ready: true})
	_ = s.SyncOnce(t.Context())
	st, _ := podStatus(s, "web")
	if st.Reason != hsync.ReasonBuild || !strings.Contains(st.Message, "sync.buildTimeout") {
		t.Fatalf("status %s/%s %q, want BuildFailed after the timeout", st.Phase, st.Reason, st.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) == 0 {
		t.Errorf("the build timed out (pod %s: %q) but OnBuild was never told: no failure and no duration in /metrics", st.Reason, st.Message)
	}
}

// TestDesiredBuildStartsBeforeSupersededOnes (issue 15 review): a pod
// whose manifest keeps changing while its build hangs: every revision
// queues one more build (holding its whole context in memory), none of the
// superseded ones is cancelled or dropped, and with buildConcurrency 1 the
// current revision waits behind every stale one, each up to
// sync.buildTimeout (30 minutes by default).
func TestDesiredBuildStartsBeforeSupersededOnes(t *testing.T) {
	fake := &blockingBuilder{Fake: synctest.NewFake(), release: make(chan struct{})}
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: t.TempDir(),
		BuildTimeout: time.Minute,
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-done })
	go func() { done <- s.Run(ctx) }()
	var revs []string
	for i := range 5 {
		p := builtPod(t, fmt.Sprintf("rev%d", i), "v")
		tag := p.Manifest.Containers[0].Image
		revs = append(revs, tag)
		s.SetDesired(hsync.Desired{Pods: []hsync.Pod{p}, Ready: true})
		// The sync has asked for this revision's build: the pod says it
		// waits for it (rev0's runs; the others queue behind it).
		testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
			st, _ := podStatus(s, "web")
			return st.Reason == hsync.ReasonBuilding && strings.Contains(st.Message, tag), fmt.Sprintf("pod %s/%s %q, want building %s", st.Phase, st.Reason, st.Message, tag)
		})
	}
	if got := fake.startedBuilds(); !slices.Equal(got, revs[:1]) {
		t.Fatalf("builds started while rev0's runs: %q, want only rev0's", got)
	}
	// rev0's build ends: the next to start must be the desired revision's.
	close(fake.release)
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		got := fake.startedBuilds()
		return len(got) >= 2, fmt.Sprintf("builds started %q, want a second one", got)
	})
	started := fake.startedBuilds()
	for i, tag := range started {
		if i > 0 && tag != revs[4] {
			t.Errorf("build %d started is of a superseded revision (rev%d); started in order: %d builds, the desired one at position %d",
				i, slices.Index(revs, tag), len(started), slices.Index(started, revs[4]))
			break
		}
	}
}
