package sync_test

// Benchmarks of image builds (issue 15) on the real engine, registry-free:
// every image is FROM scratch with the demo binary (dockertest.DemoBinary)
// and a small file of its own, its context held in memory and resolved
// with manifest/buildctx as a source does.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	gosync "sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// benchDockerfile is the Dockerfile of every built pod: the demo binary
// (one layer, the same in every pod, so cached after the first build) and
// msg.txt, the file that differs per pod and per change.
const benchDockerfile = `FROM scratch
COPY demo /demo
COPY msg.txt /msg.txt
ENTRYPOINT ["/demo"]
`

// builtPodYAML is a pod of one container built from its folder.
const builtPodYAML = `
version: v1beta1
id: %s
terminationGracePeriodSeconds: 1
containers:
  - name: app
    build:
      context: ./%[1]s
`

// buildBench is one build benchmark's hostlet on the engine: its pods,
// each built from a context of its own, converged and running.
type buildBench struct {
	ctx      context.Context
	inst     string
	cli      *client.Client
	counting *synctest.Counting
	s        *hsync.Syncer
	demo     []byte
	pods     []hsync.Pod
	// buildTimes are the durations of hostlet's builds (Options.OnBuild),
	// since the last take.
	mu         gosync.Mutex
	buildTimes []time.Duration
}

// context is a pod's build context: the Dockerfile, the demo binary and
// msg.txt holding msg.
func (bb *buildBench) context(msg string) map[string][]byte {
	return map[string][]byte{"Dockerfile": []byte(benchDockerfile), "demo": bb.demo, "msg.txt": []byte(msg)}
}

// resolve is pod id of revision rev as a source delivers it: decoded,
// its build resolved from files (the context's folder in memory).
func (bb *buildBench) resolve(b *testing.B, id, rev string, files map[string][]byte) hsync.Pod {
	b.Helper()
	ms, err := manifest.Decode(fmt.Appendf(nil, builtPodYAML, id), manifest.Origin{Source: "test", File: "pods.yaml"})
	if err != nil || len(ms) != 1 || len(ms[0].Errors) > 0 {
		b.Fatalf("decode pod %s: %v %+v", id, err, ms)
	}
	m := ms[0].Manifest
	folder := buildctx.NewListFolder(slices.Sorted(maps.Keys(files)), "",
		func(name string) ([]byte, error) { return files[name], nil },
		func(name string) bool { return name == "demo" })
	if err := buildctx.Resolve(id, &m.Containers[0], id, folder); err != nil {
		b.Fatalf("resolve the build of %s: %v", id, err)
	}
	return hsync.NewPod(m, "test", rev)
}

func (bb *buildBench) takeBuildTimes() []time.Duration {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	out := bb.buildTimes
	bb.buildTimes = nil
	return out
}

// running returns the containers of the instance by pod, failing unless
// every one runs.
func (bb *buildBench) running(b *testing.B) map[string]hruntime.Container {
	b.Helper()
	list, err := bb.counting.FullRuntime.List(bb.ctx)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]hruntime.Container{}
	for _, c := range list {
		if c.State != hruntime.StateRunning {
			b.Fatalf("container %s of pod %s is %s (%s)", c.Name, c.Pod(), c.State, c.Status)
		}
		out[c.Pod()] = c
	}
	return out
}

// newBuildBench starts a hostlet (sync.buildConcurrency 1, the default)
// building with builder (runtime.WithBuilder; "" for the engine's) on n
// built pods and converges them.
func newBuildBench(b *testing.B, n int, builder string) *buildBench {
	b.Helper()
	if testing.Short() {
		b.Skip("benchmark on the Docker engine (not run with -short)")
	}
	demo, err := os.ReadFile(dockertest.DemoBinary(b))
	if err != nil {
		b.Fatal(err)
	}
	bb := &buildBench{ctx: b.Context(), inst: dockertest.Instance(b), cli: dockertest.Client(b), demo: demo}
	var opts []hruntime.Option
	if builder != "" {
		opts = append(opts, hruntime.WithBuilder(builder))
	}
	rt, err := hruntime.New(bb.ctx, "", bb.inst, nil, opts...) // no debug log in the benchmark's output
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	bb.counting = synctest.NewCounting(rt)
	bb.s, err = hsync.New(bb.counting, hsync.Options{
		Instance: bb.inst, InfraImage: dockertest.TestImage(b), InfraCommand: []string{"/demo", "pause"},
		Interval: time.Second, Concurrency: 4, BuildConcurrency: 1, Prune: true, StateDir: b.TempDir(),
		OnBuild: func(d time.Duration, err error) {
			bb.mu.Lock()
			defer bb.mu.Unlock()
			if err == nil {
				bb.buildTimes = append(bb.buildTimes, d)
			}
		},
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bb.s.Close)
	for i := range n {
		id := fmt.Sprintf("b%02d", i)
		bb.pods = append(bb.pods, bb.resolve(b, id, "rev0", bb.context("pod "+id+"\n")))
	}
	bb.s.SetDesired(hsync.Desired{Pods: bb.pods, Ready: true})
	start := time.Now()
	if err := bb.s.SyncOnce(bb.ctx); err != nil {
		b.Fatalf("first sync: %v", err)
	}
	if got := bb.counting.Counts()["Build"]; got != n {
		b.Fatalf("first sync: %d builds, want %d", got, n)
	}
	if got := bb.running(b); len(got) != n {
		b.Fatalf("first sync: %d pods run, want %d", len(got), n)
	}
	b.Logf("%d built pods converged in %s (%d builds)", n, time.Since(start).Round(time.Millisecond), n)
	bb.takeBuildTimes()
	return bb
}

// Builders of the build endpoint, as runtime.WithBuilder takes them.
var benchBuilders = []struct{ name, version string }{
	{"buildkit", string(build.BuilderBuildKit)},
	{"classic", string(build.BuilderV1)},
}

// BenchmarkBuild: 10 pods, each built from its own context.
//
//   - noop-sync: one SyncOnce with nothing changed per iteration: the
//     engine calls it makes (apicalls/op, counted by synctest.Counting
//     around the real runtime; each method called here is one request
//     to the engine) and its builds (builds/op; must be 0).
//   - one-file-change, once per builder (runtime.WithBuilder: BuildKit,
//     what hostlet picks on a Linux engine from API 1.39, and the classic
//     builder, its fallback): each iteration changes msg.txt of one pod
//     (b03, every time: from the second change on, hostlet's build also
//     prunes the pod's oldest built image, as in steady use) to content
//     new to the engine, and measures hostlet from that source update
//     (resolving the build, SetDesired, SyncOnce) until the pod's
//     container runs on the new image (hostlet-ms/op); and, alternately
//     before or after it, the engine alone building a context that
//     differs from it only in msg.txt's content (new too), through the
//     client's ImageBuild with the tar hostlet would send and the options
//     and builder it uses (engine-build-ms/op), then replacing a container
//     of the previous such image by one of the new (stop, remove, create,
//     start; floor-ms/op is build plus that). ratio is hostlet ÷ engine
//     build, floor-ratio hostlet ÷ floor; hostlet-build-ms/op is the
//     build's part of hostlet's time (runtime.Docker.Build's duration),
//     apicalls/op the engine calls hostlet made for the change.
func BenchmarkBuild(b *testing.B) {
	const n = 10
	b.Run(fmt.Sprintf("noop-sync/pods=%d", n), func(b *testing.B) {
		bb := newBuildBench(b, n, "")
		before := bb.running(b)
		calls := map[string]int{}
		for b.Loop() {
			bb.counting.Reset()
			if err := bb.s.SyncOnce(bb.ctx); err != nil {
				b.Fatal(err)
			}
			for k, v := range bb.counting.Counts() {
				calls[k] += v
			}
		}
		total := 0
		for _, v := range calls {
			total += v
		}
		b.ReportMetric(float64(calls["Build"])/float64(b.N), "builds/op")
		b.ReportMetric(float64(total)/float64(b.N), "apicalls/op")
		if calls["Build"] != 0 || total != b.N || calls["List"] != b.N {
			b.Errorf("%d no-op syncs made calls %v, want one List each and no Build", b.N, calls)
		}
		after := bb.running(b)
		for id, c := range before {
			if after[id].ID != c.ID {
				b.Errorf("pod %s: container %s replaced by %s in a no-op sync", id, c.ID, after[id].ID)
			}
		}
	})
	for _, builder := range benchBuilders {
		b.Run(fmt.Sprintf("one-file-change/builder=%s/pods=%d", builder.name, n), func(b *testing.B) {
			benchOneFileChange(b, newBuildBench(b, n, builder.version), builder.version)
		})
	}
}

func benchOneFileChange(b *testing.B, bb *buildBench, builder string) {
	const k = 3 // the pod changed, the same each time
	floorInst := dockertest.Instance(b)
	var (
		hostletTime, engineTime, recreateTime, hostletBuild time.Duration
		floor                                               floorContainer
		calls                                               int
	)
	b.Cleanup(func() { floor.remove(bb, b) })
	engine := func(id, msg, tag string) time.Duration {
		c := bb.resolve(b, id, "engine", bb.context(msg)).Manifest.Containers[0]
		var tarball bytes.Buffer
		if _, err := buildctx.WriteTar(&tarball, c.Build); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		engineBuild(b, bb, tarball.Bytes(), tag, buildctx.RecipeName(c.Build), builder, floorInst, id)
		return time.Since(t0)
	}
	// The floor's first container, so that every iteration replaces one.
	start := fmt.Sprintf("hostlet-bench-floor/%s:start", floorInst)
	engine(bb.pods[k].Manifest.ID, fmt.Sprintf("floor start %d\n", time.Now().UnixNano()), start)
	floor.replace(bb, b, start, floorInst)

	i := 0
	for b.Loop() {
		b.StopTimer()
		id := bb.pods[k].Manifest.ID
		// Unique to this iteration, the same length for both.
		stamp := fmt.Sprintf("%d-%d", i, time.Now().UnixNano())
		hostletMsg, engineMsg := "pod "+id+" hostlet "+stamp+"\n", "pod "+id+" engine- "+stamp+"\n"
		var ( // this iteration's
			ht, hb, eb, er time.Duration
			counts         map[string]int
		)
		measureHostlet := func() {
			before := bb.running(b)[id]
			bb.counting.Reset()
			b.StartTimer()
			t0 := time.Now()
			pod := bb.resolve(b, id, fmt.Sprintf("rev%d", i+1), bb.context(hostletMsg))
			pods := slices.Clone(bb.pods)
			pods[k] = pod
			bb.s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
			if err := bb.s.SyncOnce(bb.ctx); err != nil {
				b.Fatalf("change %d: sync: %v", i, err)
			}
			ht = time.Since(t0)
			b.StopTimer()
			bb.pods = pods
			after := bb.running(b)[id]
			want := pod.Manifest.Containers[0].Image
			if after.ID == before.ID || after.Image != want || after.State != hruntime.StateRunning {
				b.Fatalf("change %d: pod %s runs %s %s (%s), want a new container of %s", i, id, after.ID, after.Image, after.State, want)
			}
			if got := bb.counting.Counts()["Build"]; got != 1 {
				b.Fatalf("change %d: %d builds, want 1", i, got)
			}
			calls += bb.counting.Total()
			counts = bb.counting.Counts()
			times := bb.takeBuildTimes()
			if len(times) != 1 {
				b.Fatalf("change %d: %d builds reported, want 1", i, len(times))
			}
			hb = times[0]
		}
		measureEngine := func() {
			tag := fmt.Sprintf("hostlet-bench-floor/%s:%d", floorInst, i)
			eb = engine(id, engineMsg, tag)
			t0 := time.Now()
			floor.replace(bb, b, tag, floorInst)
			er = time.Since(t0)
		}
		first := "hostlet"
		if i%2 == 0 {
			measureHostlet()
			measureEngine()
		} else {
			first = "engine"
			measureEngine()
			measureHostlet()
		}
		hostletTime, hostletBuild, engineTime, recreateTime = hostletTime+ht, hostletBuild+hb, engineTime+eb, recreateTime+er
		b.Logf("change %d (%s first): hostlet %d ms (its build %d ms, engine calls %v); engine build %d ms, replace %d ms",
			i, first, ht.Milliseconds(), hb.Milliseconds(), counts, eb.Milliseconds(), er.Milliseconds())
		i++
		b.StartTimer() // b.Loop wants it running; ns/op is hostlet's time
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(hostletTime), "hostlet-ms/op")
	b.ReportMetric(ms(hostletBuild), "hostlet-build-ms/op")
	b.ReportMetric(ms(engineTime), "engine-build-ms/op")
	b.ReportMetric(ms(engineTime+recreateTime), "floor-ms/op")
	b.ReportMetric(float64(calls)/float64(b.N), "apicalls/op")
	b.ReportMetric(float64(hostletTime)/float64(engineTime), "ratio")
	b.ReportMetric(float64(hostletTime)/float64(engineTime+recreateTime), "floor-ratio")
}

// engineBuild builds tarball with the engine's builder of version
// builder under tag, with the options and labels runtime.Docker.Build
// gives (the instance inst, so dockertest removes the image), and reads
// its stream to the end.
func engineBuild(b *testing.B, bb *buildBench, tarball []byte, tag, dockerfile, builder, inst, pod string) {
	b.Helper()
	opts := build.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: dockerfile, BuildArgs: map[string]*string{},
		Labels: map[string]string{hruntime.LabelBuildInstance: inst, hruntime.LabelBuildPod: pod},
		Remove: true, ForceRemove: true, Version: build.BuilderVersion(builder),
	}
	resp, err := bb.cli.ImageBuild(bb.ctx, bytes.NewReader(tarball), opts)
	if err != nil {
		b.Fatalf("engine build %s: %v", tag, err)
	}
	defer resp.Body.Close()
	// Both builders' streams are JSON messages; a failure has "error".
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			b.Fatalf("engine build %s: read the stream: %v", tag, err)
		}
		if m.Error != "" {
			b.Fatalf("engine build %s: %s", tag, m.Error)
		}
	}
}

// floorContainer is the floor's running container and its image: each
// iteration replaces it by one of the image the engine just built, as
// hostlet replaces the pod's.
type floorContainer struct {
	id, image string
}

// replace stops and removes the current container (if any) and creates
// and starts one of img, labelled with inst, with the restart policy and
// stop timeout hostlet gives the pod's; the previous image is removed
// afterwards (not part of the floor: hostlet's own pruning of older
// images is in its time).
func (f *floorContainer) replace(bb *buildBench, b *testing.B, img, inst string) {
	b.Helper()
	if f.id != "" {
		timeout := 1
		if err := bb.cli.ContainerStop(bb.ctx, f.id, container.StopOptions{Timeout: &timeout}); err != nil {
			b.Fatal(err)
		}
		if err := bb.cli.ContainerRemove(bb.ctx, f.id, container.RemoveOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	timeout := 1
	created, err := bb.cli.ContainerCreate(bb.ctx,
		&container.Config{Image: img, Labels: map[string]string{hruntime.LabelInstance: inst}, StopTimeout: &timeout},
		&container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}},
		nil, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	if err := bb.cli.ContainerStart(bb.ctx, created.ID, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	prev := f.image
	f.id, f.image = created.ID, img
	if prev != "" {
		if _, err := bb.cli.ImageRemove(bb.ctx, prev, image.RemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			b.Errorf("remove %s: %v", prev, err)
		}
	}
}

// remove removes the floor's container and image (dockertest's clean-up
// of the instance would too; this keeps the engine tidy between runs).
func (f *floorContainer) remove(bb *buildBench, b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if f.id != "" {
		if err := bb.cli.ContainerRemove(ctx, f.id, container.RemoveOptions{Force: true}); err != nil {
			b.Errorf("remove the floor container: %v", err)
		}
	}
	if f.image != "" {
		if _, err := bb.cli.ImageRemove(ctx, f.image, image.RemoveOptions{Force: true}); err != nil {
			b.Errorf("remove %s: %v", f.image, err)
		}
	}
}
