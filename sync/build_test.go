package sync_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/events"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
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
	s, err := hsync.New(counting, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk, StateDir: t.TempDir()}, slog.New(slog.DiscardHandler), events.NewLog(100))
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
