package sync_test

// Integration tests of the reconciler against the real Docker engine. Every
// test runs under its own instance label (dockertest.Instance), so the tests
// run in parallel and never see each other's containers; dockertest removes
// whatever a test leaves behind.

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	dockerevents "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// env is one test's hostlet: a Syncer of its own instance on the real
// engine.
type env struct {
	t    *testing.T
	t0   time.Time
	ctx  context.Context
	inst string
	img  string
	rt   *hruntime.Docker
	cli  *client.Client
	ev   *eventlog.Log
	s    *hsync.Syncer
	// counting wraps rt; the Syncer calls the engine through it.
	counting *synctest.Counting
	starts   *startLog
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the Docker engine (not run with -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, t0: time.Now(), ctx: ctx, inst: dockertest.Instance(t), img: dockertest.TestImage(t), cli: dockertest.Client(t), ev: eventlog.NewLog(1000)}
	e.starts = watchStarts(t, e.cli, e.inst, e.t0)
	e.rt = dockertest.DockerFor(t, e.inst)
	e.counting = synctest.NewCounting(e.rt)
	e.s = e.newSyncer()
	return e
}

// newSyncer is a Syncer of e's instance on e's engine, with a state
// directory of its own: a hostlet started anew.
func (e *env) newSyncer() *hsync.Syncer {
	e.t.Helper()
	return e.newSyncerOn(nil)
}

// newSyncerOn is newSyncer's Syncer on clock clk (nil: the real one).
func (e *env) newSyncerOn(clk clock.Clock) *hsync.Syncer {
	e.t.Helper()
	s, err := hsync.New(e.counting, hsync.Options{
		Instance: e.inst, InfraImage: e.img, InfraCommand: []string{"/demo", "pause"},
		Interval: time.Second, Concurrency: 4, Prune: true, StateDir: e.t.TempDir(), Clock: clk,
	}, dockertest.Logger(e.t), e.ev)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// pod decodes one manifest (a format string filled with args) into a
// desired pod of source "test" at revision rev1.
func (e *env) pod(format string, args ...any) hsync.Pod {
	e.t.Helper()
	return decodePod(e.t, fmt.Sprintf(format, args...))
}

func decodePod(t testing.TB, y string) hsync.Pod {
	t.Helper()
	ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "test", File: "test.yaml"})
	if err != nil {
		t.Fatalf("decode manifest: %v\n%s", err, y)
	}
	if len(ms) != 1 || len(ms[0].Errors) > 0 {
		t.Fatalf("decode manifest: %d manifests, errors %v\n%s", len(ms), ms[0].Errors, y)
	}
	return hsync.NewPod(ms[0].Manifest, "test", "rev1")
}

func (e *env) set(pods ...hsync.Pod) {
	e.s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
}

// sync runs one sync that must succeed.
func (e *env) sync() {
	e.t.Helper()
	if err := e.s.SyncOnce(e.ctx); err != nil {
		e.t.Fatalf("SyncOnce: %v", err)
	}
}

// run runs the sync loop until the end of the test.
func (e *env) run() {
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.s.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
}

// containers lists the instance's containers by "pod/slot".
func (e *env) containers() map[string]hruntime.Container {
	e.t.Helper()
	list, err := e.rt.List(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]hruntime.Container{}
	for _, c := range list {
		k := c.Pod() + "/" + c.Slot()
		if _, dup := out[k]; dup {
			e.t.Fatalf("two containers in slot %s: %+v", k, list)
		}
		out[k] = c
	}
	return out
}

// volumes lists the instance's volumes.
func (e *env) volumes() []*volume.Volume {
	e.t.Helper()
	vols, err := e.cli.VolumeList(e.ctx, volume.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*volume.Volume
	for _, v := range vols.Volumes {
		if v.Labels[hruntime.LabelInstance] == e.inst {
			out = append(out, v)
		}
	}
	return out
}

func ids(cs map[string]hruntime.Container) map[string]string {
	out := map[string]string{}
	for k, c := range cs {
		out[k] = c.ID
	}
	return out
}

func (e *env) status(id string) (hsync.PodStatus, bool) {
	for _, p := range e.s.Report().Pods {
		if p.ID == id {
			return p, true
		}
	}
	return hsync.PodStatus{}, false
}

func (e *env) mustStatus(id string) hsync.PodStatus {
	e.t.Helper()
	p, ok := e.status(id)
	if !ok {
		e.t.Fatalf("pod %s not in the report: %+v", id, e.s.Report())
	}
	return p
}

func (e *env) containerStatus(pod, name string) (hsync.ContainerStatus, bool) {
	p, ok := e.status(pod)
	if !ok {
		return hsync.ContainerStatus{}, false
	}
	for _, c := range p.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return hsync.ContainerStatus{}, false
}

// waitPhase waits until the pod's reported phase (and reason, when not "")
// is as given.
func (e *env) waitPhase(id, phase, reason string, timeout time.Duration) hsync.PodStatus {
	e.t.Helper()
	var p hsync.PodStatus
	testkit.WaitFor(e.t, timeout, func() (bool, string) {
		var ok bool
		p, ok = e.status(id)
		if !ok {
			return false, "pod " + id + " not reported yet"
		}
		return p.Phase == phase && (reason == "" || p.Reason == reason),
			fmt.Sprintf("pod %s: phase %s reason %q message %q, want %s %q", id, p.Phase, p.Reason, p.Message, phase, reason)
	})
	return p
}

func (e *env) inspect(id string) container.InspectResponse {
	e.t.Helper()
	r, err := e.cli.ContainerInspect(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// get does one GET and fails the test unless it answers 200.
func get(t *testing.T, u string) string {
	t.Helper()
	code, b, err := testkit.HTTP("GET", u, "")
	if err != nil || code != 200 {
		t.Fatalf("GET %s: %d %q %v, want 200", u, code, b, err)
	}
	return b
}

func fetchURL(port int, target string) string {
	return fmt.Sprintf("http://127.0.0.1:%d/fetch?url=%s", port, url.QueryEscape(target))
}

// twoContainerPod is a pod whose containers a and b listen on 8081 and
// 8082, published on the host ports pa and pb of 127.0.0.1. Both mount the
// empty-dir volume "shared" at /shared; b also mounts it read-only at /ro.
const twoContainerPod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 2
volumes:
  - name: shared
containers:
  - name: a
    image: %[2]s
    env:
      - {name: LISTEN, value: ":8081"}
      - {name: MESSAGE, value: hello-from-a}
    ports:
      - {name: http, containerPort: 8081, hostPort: %[3]d, hostIP: 127.0.0.1}
    volumeMounts:
      - {name: shared, mountPath: /shared}
  - name: b
    image: %[2]s
    env:
      - {name: LISTEN, value: ":8082"}
      - {name: MESSAGE, value: hello-from-b}
    ports:
      - {containerPort: 8082, hostPort: %[4]d, hostIP: 127.0.0.1}
    volumeMounts:
      - {name: shared, mountPath: /shared}
      - {name: shared, mountPath: /ro, readOnly: true}
`

// checkPodNetwork checks that the two containers of a twoContainerPod reach
// each other on localhost and answer on their published ports.
func checkPodNetwork(t *testing.T, timeout time.Duration, pa, pb int) {
	t.Helper()
	testkit.WaitHTTP(t, timeout, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pa), "", "MESSAGE=hello-from-a")
	testkit.WaitHTTP(t, timeout, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pb), "", "MESSAGE=hello-from-b")
	testkit.WaitHTTP(t, timeout, "GET", fetchURL(pa, "http://localhost:8082/"), "", "MESSAGE=hello-from-b")
	testkit.WaitHTTP(t, timeout, "GET", fetchURL(pb, "http://localhost:8081/"), "", "MESSAGE=hello-from-a")
}

// Must show 1: a two-container pod shares one network namespace, publishes
// its ports, passes env, shares an empty-dir volume and mounts read-only.
func TestPodNetworkEnvVolumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pa, pb := testkit.FreePort(t), testkit.FreePort(t)
	e.set(e.pod(twoContainerPod, "web", e.img, pa, pb))
	e.sync()

	cs := e.containers()
	if len(cs) != 3 || cs["web/"+hruntime.InfraName].ID == "" || cs["web/a"].ID == "" || cs["web/b"].ID == "" {
		t.Fatalf("containers = %v, want web/a, web/b and the infra container", ids(cs))
	}
	for k, c := range cs {
		if c.State != hruntime.StateRunning {
			t.Errorf("%s is %s (%s)", k, c.State, c.Status)
		}
		if c.Labels[hruntime.LabelManaged] != "true" || c.Labels[hruntime.LabelInstance] != e.inst ||
			c.Labels[hruntime.LabelSource] != "test" || c.Labels[hruntime.LabelRevision] != "rev1" ||
			!strings.HasPrefix(c.Labels[hruntime.LabelHash], "v1:") || !strings.HasPrefix(c.Name, "hostlet_web_") {
			t.Errorf("%s: name %s labels %v", k, c.Name, c.Labels)
		}
	}
	infraID := cs["web/"+hruntime.InfraName].ID
	for _, slot := range []string{"a", "b"} {
		if nm := e.inspect(cs["web/"+slot].ID).HostConfig.NetworkMode; string(nm) != "container:"+infraID {
			t.Errorf("web/%s network mode %q, want container:%s", slot, nm, infraID)
		}
	}

	// Published ports answer; the containers reach each other on localhost.
	checkPodNetwork(t, 30*time.Second, pa, pb)

	// Env.
	if got := get(t, fmt.Sprintf("http://127.0.0.1:%d/env?name=MESSAGE", pa)); got != "hello-from-a" {
		t.Errorf("env MESSAGE in a = %q", got)
	}
	if got := get(t, fmt.Sprintf("http://127.0.0.1:%d/env?name=MESSAGE", pb)); got != "hello-from-b" {
		t.Errorf("env MESSAGE in b = %q", got)
	}

	// The empty-dir volume: written in a, read in b.
	if code, b, err := testkit.HTTP("POST", fmt.Sprintf("http://127.0.0.1:%d/write?path=/shared/note", pa), "written by a"); err != nil || code != 200 {
		t.Fatalf("write in a: %d %q %v", code, b, err)
	}
	if got := get(t, fmt.Sprintf("http://127.0.0.1:%d/read?path=/shared/note", pb)); got != "written by a" {
		t.Errorf("b reads %q from the shared volume", got)
	}
	// The read-only mount shows the same data and refuses writes.
	if got := get(t, fmt.Sprintf("http://127.0.0.1:%d/read?path=/ro/note", pb)); got != "written by a" {
		t.Errorf("b reads %q from the read-only mount", got)
	}
	code, body, err := testkit.HTTP("POST", fmt.Sprintf("http://127.0.0.1:%d/write?path=/ro/other", pb), "x")
	if err != nil || code != 500 || !strings.Contains(body, "read-only file system") {
		t.Errorf("write to the read-only mount: %d %q %v, want 500 read-only file system", code, body, err)
	}
	var ours []string
	for _, v := range e.volumes() {
		ours = append(ours, v.Name)
		if v.Labels[hruntime.LabelPod] != "web" || v.Labels[hruntime.LabelVolume] != "shared" || v.Labels[hruntime.LabelManaged] != "true" {
			t.Errorf("volume %s labels %v", v.Name, v.Labels)
		}
	}
	if len(ours) != 1 {
		t.Errorf("volumes of the instance: %v, want one", ours)
	}

	p := e.mustStatus("web")
	if p.Phase != hsync.PhaseRunning || len(p.Containers) != 2 || p.Source != "test" || p.Revision != "rev1" {
		t.Errorf("status = %+v", p)
	}
	for _, c := range p.Containers {
		if c.State != hruntime.StateRunning || !c.Healthy || c.ContainerID != cs["web/"+c.Name].ID || c.Restarts != 0 {
			t.Errorf("container status %+v", c)
		}
	}
	// Env values never appear in the status.
	for _, c := range p.Manifest.Containers {
		for _, ev := range c.Env {
			if strings.Contains(ev.Value, "hello") {
				t.Errorf("status shows env value %s=%s", ev.Name, ev.Value)
			}
		}
	}

	// A second sync changes nothing.
	before := ids(cs)
	e.counting.Reset()
	e.sync()
	if got := e.counting.Counts(); len(got) != 1 || got["List"] != 1 {
		t.Errorf("no-op sync made calls %v, want one List", got)
	}
	if after := ids(e.containers()); !mapsEqual(before, after) {
		t.Errorf("no-op sync changed containers: %v -> %v", before, after)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// changed returns the slots whose container ID differs between two
// listings (or that exist in only one).
func changed(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if after[k] != v {
			out = append(out, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

const singlePod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 2
containers:
  - name: app
    image: %[2]s
    env:
      - {name: MESSAGE, value: %[3]s}
    ports:
      - {containerPort: 8080, hostPort: %[4]d, hostIP: 127.0.0.1}
`

const probedPod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 2
containers:
  - name: app
    image: %[2]s
    livenessProbe:
      type: http
      httpGet: {path: /healthz, port: "8080"}
      periodSeconds: %[3]d
`

// Must show 2: a changed image tag, env value or port recreates exactly the
// pod it belongs to; a changed probe setting recreates nothing.
func TestChangesRecreateOnlyTheAffectedPod(t *testing.T) {
	t.Parallel()
	// A second tag of the test image. Registered before the instance, so it
	// is removed after the instance's containers are.
	cli := dockertest.Client(t)
	img := dockertest.TestImage(t)
	img2 := img + "-v2"
	if err := cli.ImageTag(t.Context(), img, img2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, img2, image.RemoveOptions{}); err != nil {
			t.Errorf("remove %s: %v", img2, err)
		}
	})

	e := newEnv(t)
	pImg, pEnv, pPort, pPort2 := testkit.FreePort(t), testkit.FreePort(t), testkit.FreePort(t), testkit.FreePort(t)
	pTwoA, pTwoB := testkit.FreePort(t), testkit.FreePort(t)
	imgPod := e.pod(singlePod, "img", e.img, "v1", pImg)
	envPod := e.pod(singlePod, "env", e.img, "one", pEnv)
	portPod := e.pod(singlePod, "port", e.img, "v1", pPort)
	twoPod := e.pod(twoContainerPod, "two", e.img, pTwoA, pTwoB)
	probePod := e.pod(probedPod, "probe", e.img, 10)
	desired := []hsync.Pod{imgPod, envPod, portPod, twoPod, probePod}
	e.set(desired...)
	e.sync()
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pEnv), "", "MESSAGE=one")

	step := func(name string, replace hsync.Pod, wantChanged []string, wantReason string) {
		t.Helper()
		before := ids(e.containers())
		for i := range desired {
			if desired[i].Manifest.ID == replace.Manifest.ID {
				desired[i] = replace
			}
		}
		e.set(desired...)
		e.sync()
		after := e.containers()
		if got := changed(before, ids(after)); !slices.Equal(got, wantChanged) {
			t.Errorf("%s: containers replaced: %v, want %v", name, got, wantChanged)
		}
		for k, c := range after {
			if c.State != hruntime.StateRunning {
				t.Errorf("%s: %s is %s (%s)", name, k, c.State, c.Status)
			}
		}
		if wantReason != "" {
			p := e.mustStatus(replace.Manifest.ID)
			if p.LastAction == nil || p.LastAction.Action != string(hsync.ActionRecreate) || !strings.Contains(p.LastAction.Reason, wantReason) {
				t.Errorf("%s: last action %+v, want recreate because %q", name, p.LastAction, wantReason)
			}
			for _, c := range p.Containers {
				if c.Restarts != 0 {
					t.Errorf("%s: container %s counts %d restarts after a recreate, want 0", name, c.Name, c.Restarts)
				}
			}
		}
	}

	// The reason names the old image and the new tag.
	_, tag2, _ := strings.Cut(img2, ":")
	step("image tag", e.pod(singlePod, "img", img2, "v1", pImg), []string{"img/app"}, "image "+e.img+" -> ")
	if p := e.mustStatus("img"); p.LastAction == nil || !strings.HasSuffix(p.LastAction.Reason, tag2) {
		t.Errorf("image tag: last action %+v, want it to end with the new tag %s", p.LastAction, tag2)
	}
	if c := e.containers()["img/app"]; c.Image != img2 {
		t.Errorf("img/app runs image %s, want %s", c.Image, img2)
	}

	step("env value", e.pod(singlePod, "env", e.img, "two", pEnv), []string{"env/app"}, "env MESSAGE changed")
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/env?name=MESSAGE", pEnv), "", "two")
	if p := e.mustStatus("env"); p.LastAction != nil && strings.Contains(p.LastAction.Reason, "two") {
		t.Errorf("the last action shows the env value: %+v", p.LastAction)
	}

	step("port", e.pod(singlePod, "port", e.img, "v1", pPort2), []string{"port/app"}, "ports")
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pPort2), "", "MESSAGE=v1")
	if code, _, err := testkit.HTTP("GET", fmt.Sprintf("http://127.0.0.1:%d/", pPort), ""); err == nil {
		t.Errorf("the old host port %d still answers (%d)", pPort, code)
	}

	// A port of a two-container pod lives on its infra container: the whole
	// pod is recreated, nothing else.
	pTwoA2 := testkit.FreePort(t)
	step("pod port", e.pod(twoContainerPod, "two", e.img, pTwoA2, pTwoB),
		[]string{"two/" + hruntime.InfraName, "two/a", "two/b"}, "")
	checkPodNetwork(t, 30*time.Second, pTwoA2, pTwoB)

	step("probe period", e.pod(probedPod, "probe", e.img, 5), nil, "")
	if p := e.mustStatus("probe"); p.Manifest.Containers[0].LivenessProbe.PeriodSeconds != 5 {
		t.Errorf("status shows the old manifest: %+v", p.Manifest.Containers[0].LivenessProbe)
	}
}

// Must show 3: removing a manifest removes its containers and volumes;
// containers hostlet did not make for this instance are never touched.
func TestRemoveManifestLeavesForeignContainers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := dockertest.Instance(t)

	// By hand: a container without hostlet labels, one with the labels of
	// another instance naming the same pod and slot, and one of this
	// instance without io.hostlet.managed; and a volume of the other
	// instance.
	byHand := func(name string, labels map[string]string) string {
		t.Helper()
		resp, err := e.cli.ContainerCreate(e.ctx, &container.Config{Image: e.img, Cmd: []string{"pause"}, Labels: labels}, nil, nil, nil, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = e.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true})
		})
		if err := e.cli.ContainerStart(e.ctx, resp.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		return resp.ID
	}
	foreign := map[string]string{
		"unlabelled": byHand("hostlet-test-unlabelled-"+e.inst, nil),
		"other instance": byHand("hostlet_gone_app_"+other, map[string]string{
			hruntime.LabelManaged: "true", hruntime.LabelInstance: other, hruntime.LabelPod: "gone",
			hruntime.LabelContainer: "a", hruntime.LabelHash: "v1:0",
		}),
		"unmanaged": byHand("hostlet-test-unmanaged-"+e.inst, map[string]string{
			hruntime.LabelInstance: e.inst, hruntime.LabelPod: "gone", hruntime.LabelContainer: "b",
		}),
	}
	otherVol, err := e.cli.VolumeCreate(e.ctx, volume.CreateOptions{Name: "hostlet_gone_shared_" + other, Labels: map[string]string{
		hruntime.LabelManaged: "true", hruntime.LabelInstance: other, hruntime.LabelPod: "gone", hruntime.LabelVolume: "shared",
	}})
	if err != nil {
		t.Fatal(err)
	}

	keep := e.pod(singlePod, "keep", e.img, "k", testkit.FreePort(t))
	gone := e.pod(twoContainerPod, "gone", e.img, testkit.FreePort(t), testkit.FreePort(t))
	e.set(keep, gone)
	e.sync()
	before := e.containers()
	if len(before) != 4 {
		t.Fatalf("containers = %v, want keep/app and gone's three", ids(before))
	}
	ourVolumes := func() []string {
		var names []string
		for _, v := range e.volumes() {
			names = append(names, v.Name)
		}
		return names
	}
	if v := ourVolumes(); len(v) != 1 {
		t.Fatalf("volumes = %v, want gone's one", v)
	}

	// Until every source has delivered its first set, nothing is removed.
	e.s.SetDesired(hsync.Desired{Pods: []hsync.Pod{keep}, Ready: false})
	e.sync()
	if got := changed(ids(before), ids(e.containers())); len(got) != 0 {
		t.Errorf("a sync with sources not ready changed %v", got)
	}
	if p := e.mustStatus("gone"); p.Reason != "NotDesired" {
		t.Errorf("gone while sources are not ready: %+v", p)
	}

	e.set(keep)
	e.sync()
	after := e.containers()
	if len(after) != 1 || after["keep/app"].ID != before["keep/app"].ID {
		t.Errorf("after removing gone: %v, want only keep/app %s", ids(after), before["keep/app"].ID)
	}
	if v := ourVolumes(); len(v) != 0 {
		t.Errorf("gone's volumes remain: %v", v)
	}
	if _, ok := e.status("gone"); ok {
		t.Errorf("gone still reported: %+v", e.s.Report().Pods)
	}
	for what, id := range foreign {
		r := e.inspect(id)
		if !r.State.Running || r.RestartCount != 0 {
			t.Errorf("the %s container was touched: %+v", what, r.State)
		}
	}
	if _, err := e.cli.VolumeInspect(e.ctx, otherVol.Name); err != nil {
		t.Errorf("the other instance's volume: %v", err)
	}
}

// Must show 6: a pod whose image cannot be pulled is Failed with the
// engine's message; the other pods run, and a pod whose new image cannot
// be pulled keeps running its old version.
func TestPullFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const bad = "hostlet-test-nonexistent.invalid/x:1"
	pGood, pUpd := testkit.FreePort(t), testkit.FreePort(t)
	good := e.pod(singlePod, "good", e.img, "good", pGood)
	upd := e.pod(singlePod, "upd", e.img, "upd", pUpd)
	e.set(good, upd)
	e.sync()
	updID := e.containers()["upd/app"].ID

	e.set(good, e.pod(singlePod, "upd", bad, "upd", pUpd), e.pod(singlePod, "bad", bad, "bad", testkit.FreePort(t)))
	err := e.s.SyncOnce(e.ctx)
	if err == nil || !strings.Contains(err.Error(), "pod bad") || !strings.Contains(err.Error(), "pod upd") {
		t.Errorf("SyncOnce = %v, want errors for pods bad and upd", err)
	}
	for _, id := range []string{"bad", "upd"} {
		p := e.mustStatus(id)
		if p.Phase != hsync.PhaseFailed || p.Reason != hsync.ReasonPull || !strings.Contains(p.Message, "hostlet-test-nonexistent.invalid") ||
			!strings.Contains(p.Message, "no such host") {
			t.Errorf("pod %s: phase %s reason %q message %q, want Failed ErrImagePull with the engine's message", id, p.Phase, p.Reason, p.Message)
		}
	}
	cs := e.containers()
	if _, ok := cs["bad/app"]; ok || len(cs) != 2 {
		t.Errorf("containers = %v, want good/app and upd/app only", ids(cs))
	}
	if c := cs["upd/app"]; c.ID != updID || c.State != hruntime.StateRunning {
		t.Errorf("upd/app = %s %s, want the old container %s still running", c.ID, c.State, updID)
	}
	if p := e.mustStatus("good"); p.Phase != hsync.PhaseRunning {
		t.Errorf("good: %+v", p)
	}
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pGood), "", "MESSAGE=good")
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pUpd), "", "MESSAGE=upd")
	var pullEvents int
	for _, ev := range e.ev.List() {
		if ev.Type == eventlog.PullFailed && ev.Reason == hsync.ReasonPull {
			pullEvents++
		}
	}
	if pullEvents != 2 {
		t.Errorf("%d pull-failed events, want 2: %+v", pullEvents, e.ev.List())
	}

	// The failed pods back off: the next sync does not try again at once,
	// and they stay Failed.
	e.counting.Reset()
	if err := e.s.SyncOnce(e.ctx); err != nil {
		t.Errorf("sync while backing off: %v", err)
	}
	if n := e.counting.Counts()["EnsureImage"]; n != 0 {
		t.Errorf("a sync while backing off pulled %d times", n)
	}
	if p := e.mustStatus("bad"); p.Phase != hsync.PhaseFailed || p.Reason != hsync.ReasonPull {
		t.Errorf("bad after a second sync: %+v", p)
	}
}

const crashingPod = `
version: v1beta1
id: %[1]s
restartPolicy: %[2]s
terminationGracePeriodSeconds: 2
containers:
  - name: app
    image: %[3]s
    env:
      - {name: EXIT_AFTER, value: 1s}
      - {name: EXIT_CODE, value: "%[4]d"}
`

// Must show 5 (crashes): a container that exits is restarted per the pod's
// restartPolicy, each restart is counted, and a crash loop is reported.
func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pOnce := testkit.FreePort(t)
	e.set(
		e.pod(crashingPod, "always", "Always", e.img, 3),
		e.pod(crashingPod, "never", "Never", e.img, 3),
		e.pod(crashingPod, "onfailure-ok", "OnFailure", e.img, 0),
		e.pod(crashingPod, "onfailure-bad", "OnFailure", e.img, 3),
		e.pod(singlePod, "once", e.img, "once", pOnce),
	)
	e.run()
	var cs map[string]hruntime.Container
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		cs = e.containers()
		return len(cs) == 5, fmt.Sprintf("containers %v", ids(cs))
	})
	first := ids(cs)

	// One crash, one restart by the engine, counted exactly once (checked
	// once the syncer has seen the start after the crash).
	testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pOnce), "", "MESSAGE=once")
	testkit.WaitHTTP(t, 10*time.Second, "POST", fmt.Sprintf("http://127.0.0.1:%d/exit?code=3", pOnce), "", "exiting with code 3")
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		starts := e.startEvents(first["once/app"])
		c, _ := e.containerStatus("once", "app")
		last := starts[len(starts)-1].UTC().Format(time.RFC3339)
		return len(starts) == 2 && c.StartedAt == last && c.Restarts == 1 && c.State == hruntime.StateRunning,
			fmt.Sprintf("once: reported %d restarts, %s, started at %s; the engine started it %d times, last at %s",
				c.Restarts, c.State, c.StartedAt, len(starts), last)
	})
	testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pOnce), "", "MESSAGE=once")
	if p := e.mustStatus("once"); p.Phase != hsync.PhaseRunning {
		t.Errorf("once after one crash: phase %s %q", p.Phase, p.Reason)
	}

	// Restarted, in the same container, and counted. The engine's start
	// events count the restarts whoever made them: Docker restarts by
	// policy (and counts in RestartCount); on Podman, whose restarts lag,
	// hostlet often finds the container exited and starts it first.
	for _, id := range []string{"always", "onfailure-bad"} {
		testkit.WaitFor(t, time.Minute, func() (bool, string) {
			c, ok := e.containerStatus(id, "app")
			starts := len(e.startEvents(first[id+"/app"]))
			return ok && c.Restarts >= 2 && starts >= 3 && c.ContainerID == first[id+"/app"],
				fmt.Sprintf("pod %s: reported restarts %d of container %s; the engine started %s %d times", id, c.Restarts, c.ContainerID, first[id+"/app"], starts)
		})
	}
	// A pod that keeps crashing is Failed: CrashLoopBackOff.
	p := e.waitPhase("always", hsync.PhaseFailed, hsync.ReasonCrashLoop, time.Minute)
	if !strings.Contains(p.Message, "app") {
		t.Errorf("crash loop message %q does not name the container", p.Message)
	}
	e.waitPhase("onfailure-bad", hsync.PhaseFailed, hsync.ReasonCrashLoop, time.Minute)

	// Left alone: Never, and OnFailure after exit code 0. Wait until syncs
	// that started well after both exited have run, then check that neither
	// was started again.
	var exited time.Time
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		a, b := e.inspect(first["never/app"]), e.inspect(first["onfailure-ok/app"])
		if a.State.Running || b.State.Running || a.State.FinishedAt == "" || b.State.FinishedAt == "" {
			return false, fmt.Sprintf("never: %s, onfailure-ok: %s", a.State.Status, b.State.Status)
		}
		for _, f := range []string{a.State.FinishedAt, b.State.FinishedAt} {
			if ft, err := time.Parse(time.RFC3339Nano, f); err == nil && ft.After(exited) {
				exited = ft
			}
		}
		return true, ""
	})
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		last := e.s.Report().LastSync.Start
		return last.After(exited.Add(3 * time.Second)), fmt.Sprintf("last sync started %s, want 3 s after %s", last, exited)
	})
	for id, code := range map[string]int{"never": 3, "onfailure-ok": 0} {
		r := e.inspect(first[id+"/app"])
		if r.State.Running || r.RestartCount != 0 || r.State.ExitCode != code {
			t.Errorf("pod %s: running %v, engine restart count %d, exit code %d; want left exited with %d", id, r.State.Running, r.RestartCount, r.State.ExitCode, code)
		}
		c, _ := e.containerStatus(id, "app")
		if c.Restarts != 0 || c.State != hruntime.StateExited {
			t.Errorf("pod %s: reported %+v, want exited with 0 restarts", id, c)
		}
	}
	if p := e.mustStatus("never"); p.Phase != hsync.PhaseFailed {
		t.Errorf("never, exited 3: phase %s %q, want Failed", p.Phase, p.Reason)
	}
	if p := e.mustStatus("onfailure-ok"); p.Phase != hsync.PhaseSucceeded {
		t.Errorf("onfailure-ok, exited 0: phase %s %q, want Succeeded", p.Phase, p.Reason)
	}
	// No container was replaced.
	if now := ids(e.containers()); !mapsEqual(first, now) {
		t.Errorf("containers replaced: %v", changed(first, now))
	}
}

const livenessPod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 2
containers:
  - name: app
    image: %[2]s
    ports:
      - {containerPort: 8080, hostPort: %[3]d, hostIP: 127.0.0.1}
    livenessProbe:
%[4]s
      initialDelaySeconds: 2
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
`

// A container stopped with its restart policy cleared (kept until its
// successor started when hostlet was killed) that is wanted again is
// started with its policy set back on the engine, so the engine restarts
// it after a crash or a reboot again.
func TestContainerStartedAgainHasItsRestartPolicyBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(e.pod(singlePod, "kept", e.img, "kept", testkit.FreePort(t)))
	e.sync()
	kept := e.containers()["kept/app"]
	if err := e.rt.Stop(e.ctx, kept.ID, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.rt.NoRestart(e.ctx, kept.ID); err != nil {
		t.Fatal(err)
	}
	e.sync()
	if c := e.containers()["kept/app"]; c.ID != kept.ID || !c.Running() {
		t.Fatalf("container %+v, want %.12s started again", c, kept.ID)
	}
	if p := e.inspect(kept.ID).HostConfig.RestartPolicy; p.Name != "always" {
		t.Errorf("restart policy %+v after the start, want always", p)
	}
}

// A hostlet killed in a recreate, after it cleared the old container's
// restart policy and before it created its successor, then started again
// once the change was reverted, adopts the old container as wanted: a
// stopped one, exited 0 on SIGTERM, runs again though its pod's
// restartPolicy is OnFailure; a running one (stopped after its preStop
// hook, where the kill fell between) runs on; each with its policy back.
func TestAdoptedContainerLeftByARecreateCutShortRunsWithItsPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const onFailurePod = singlePod + "restartPolicy: OnFailure\n"
	stoppedPort := testkit.FreePort(t)
	stoppedPod := e.pod(onFailurePod, "stopped", e.img, "stopped", stoppedPort)
	runningPod := e.pod(onFailurePod, "running", e.img, "running", testkit.FreePort(t))
	e.set(stoppedPod, runningPod)
	e.sync()
	before := e.containers()
	stopped, running := before["stopped/app"], before["running/app"]
	// Its app answers once it handles SIGTERM: a process 1 that has not
	// yet set its handler ignores the signal, and is killed (137).
	testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/healthz", stoppedPort), "", "ok")
	if err := e.rt.Stop(e.ctx, stopped.ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if code := e.inspect(stopped.ID).State.ExitCode; code != 0 {
		t.Fatalf("the test image exited %d on SIGTERM; the case needs an exit 0", code)
	}
	for _, id := range []string{stopped.ID, running.ID} {
		if err := e.rt.NoRestart(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// The running one's policy goes back once a stop the engine might
	// still carry out would have ended: a pass past its stop timeout.
	clk := clock.NewFake(time.Now())
	s2 := e.newSyncerOn(clk)
	s2.SetDesired(hsync.Desired{Pods: []hsync.Pod{stoppedPod, runningPod}, Ready: true})
	for range 2 {
		if err := s2.SyncOnce(e.ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	after := e.containers()
	for _, slot := range []string{"stopped/app", "running/app"} {
		if c := after[slot]; c.ID != before[slot].ID || !c.Running() {
			t.Errorf("%s: container %+v, want %.12s running", slot, c, before[slot].ID)
		}
		if p := e.inspect(before[slot].ID).HostConfig.RestartPolicy; p.Name != "on-failure" {
			t.Errorf("%s: restart policy %+v, want on-failure", slot, p)
		}
	}
}

// Must show 5 (probes): a failing liveness probe, http or exec, restarts the
// container (the same container, started again) and every restart is
// counted exactly once.
func TestLivenessProbeRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pHTTP, pExec := testkit.FreePort(t), testkit.FreePort(t)
	const (
		httpFail = "      type: http\n      httpGet: {path: /healthz, port: \"8080\"}"
		httpOK   = "      type: http\n      httpGet: {path: /, port: \"8080\"}"
		execFail = "      type: exec\n      exec: {command: [/demo, probe-fail]}"
		execOK   = "      type: exec\n      exec: {command: [/demo, probe-ok]}"
	)
	httpPod, execPod := e.pod(livenessPod, "http", e.img, pHTTP, httpFail), e.pod(livenessPod, "exec", e.img, pExec, execFail)
	e.set(httpPod, execPod)
	e.run()
	var cs map[string]hruntime.Container
	testkit.WaitFor(t, time.Minute, func() (bool, string) {
		cs = e.containers()
		return len(cs) == 2, fmt.Sprintf("containers %v", ids(cs))
	})
	testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/healthz", pHTTP), "", "ok")
	e.waitPhase("http", hsync.PhaseRunning, "", 30*time.Second)
	testkit.WaitHTTP(t, 10*time.Second, "POST", fmt.Sprintf("http://127.0.0.1:%d/unhealthy", pHTTP), "", "now unhealthy")

	// Both probes now fail: wait for a restart of each, then make its probe
	// pass (a probe change recreates nothing) so the restarts stop.
	for _, pod := range []string{"http", "exec"} {
		id := cs[pod+"/app"].ID
		testkit.WaitFor(t, time.Minute, func() (bool, string) {
			n := len(e.startEvents(id))
			return n >= 2, fmt.Sprintf("pod %s: started %d times, want a restart", pod, n)
		})
		if pod == "http" {
			httpPod = e.pod(livenessPod, "http", e.img, pHTTP, httpOK)
		} else {
			execPod = e.pod(livenessPod, "exec", e.img, pExec, execOK)
		}
		e.set(httpPod, execPod)
	}

	for _, pod := range []string{"http", "exec"} {
		id := cs[pod+"/app"].ID
		// Once the syncer has seen the container's last start (and so every
		// stop before it), it counts exactly one restart per start after
		// the first.
		var c hsync.ContainerStatus
		testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
			starts := e.startEvents(id)
			c, _ = e.containerStatus(pod, "app")
			last := starts[len(starts)-1].UTC().Format(time.RFC3339)
			return c.StartedAt == last && c.Restarts == len(starts)-1 && c.Healthy,
				fmt.Sprintf("pod %s: reported %d restarts, started at %s, healthy %v; the engine started it %d times, last at %s",
					pod, c.Restarts, c.StartedAt, c.Healthy, len(starts), last)
		})
		if c.ContainerID != id {
			t.Errorf("pod %s: container %s, want the same container %s", pod, c.ContainerID, id)
		}
		var probeRestarts, otherRestarts int
		for _, ev := range e.ev.List() {
			if ev.Pod == pod && ev.Type == eventlog.Restart {
				if strings.Contains(ev.Reason, "liveness") {
					probeRestarts++
				} else {
					otherRestarts++
				}
			}
		}
		if probeRestarts != c.Restarts || otherRestarts != 0 {
			t.Errorf("pod %s: %d probe restart events, %d other restart events; want %d and 0", pod, probeRestarts, otherRestarts, c.Restarts)
		}
		if p := e.mustStatus(pod); p.LastAction == nil || !strings.Contains(p.LastAction.Reason, "liveness probe failed") {
			t.Errorf("pod %s: last action %+v, want the probe restart", pod, p.LastAction)
		}
	}
	if now := e.containers(); !mapsEqual(ids(cs), ids(now)) {
		t.Errorf("probe restarts replaced containers: %v", changed(ids(cs), ids(now)))
	}
}

// Must show 7: killing a pod's infra container brings the whole pod back:
// its containers share a working network again and its ports answer.
func TestInfraKillRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pa, pb := testkit.FreePort(t), testkit.FreePort(t)
	e.set(e.pod(twoContainerPod, "web", e.img, pa, pb))
	e.run()
	checkPodNetwork(t, time.Minute, pa, pb)
	before := e.containers()
	infra := before["web/"+hruntime.InfraName]

	oldStart := e.inspect(infra.ID).State.StartedAt
	if err := e.cli.ContainerKill(e.ctx, infra.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		st := e.inspect(infra.ID).State
		return !st.Running || st.StartedAt != oldStart, "the infra container still runs its first process"
	})
	// Each app container is restarted once, into the new namespace, and
	// that is counted once (checked after the syncer has seen its start).
	// Until then the old namespace may still answer on the published ports
	// for a moment, so the network is checked after the restarts.
	checkRestarted := func(n int) {
		t.Helper()
		for _, slot := range []string{"a", "b"} {
			id := before["web/"+slot].ID
			testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
				starts := e.startEvents(id)
				c, _ := e.containerStatus("web", slot)
				last := starts[len(starts)-1].UTC().Format(time.RFC3339)
				return len(starts) == n+1 && c.StartedAt == last && c.Restarts == n && c.ContainerID == id,
					fmt.Sprintf("web/%s: reported %d restarts, started at %s, container %s; the engine started %s %d times, last at %s",
						slot, c.Restarts, c.StartedAt, c.ContainerID, id, len(starts), last)
			})
		}
		e.waitPhase("web", hsync.PhaseRunning, "", 10*time.Second)
	}
	checkRestarted(1)
	checkPodNetwork(t, time.Minute, pa, pb)
	after := e.containers()
	for k, c := range after {
		if c.State != hruntime.StateRunning {
			t.Errorf("%s is %s", k, c.State)
		}
	}
	if len(after) != 3 {
		t.Errorf("containers after recovery: %v", ids(after))
	}

	// The infra process crashes (killed from the host, not through the
	// engine): the engine restarts it by its restart policy, and the pod
	// recovers again. Podman's restart goes through a cleanup process
	// that can be slower than hostlet's next sync, which then starts the
	// infra container itself (no engine restart counted).
	st := e.inspect(infra.ID).State
	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the infra process %d: %v", st.Pid, err)
	}
	podman := dockertest.Engine(t).Podman()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		now := e.inspect(infra.ID)
		return now.State.StartedAt != st.StartedAt && now.State.Running && (now.RestartCount == 1 || podman && now.RestartCount == 0),
			fmt.Sprintf("infra: started at %s (was %s), engine restart count %d", now.State.StartedAt, st.StartedAt, now.RestartCount)
	})
	checkRestarted(2)
	checkPodNetwork(t, time.Minute, pa, pb)
	if now := e.containers(); !mapsEqual(ids(before), ids(now)) {
		t.Errorf("containers replaced: %v", changed(ids(before), ids(now)))
	}
}

// startEvents returns the times of the engine's start events of container
// id since the test began, oldest first (at least one: the container was
// started).
func (e *env) startEvents(id string) []time.Time {
	e.t.Helper()
	e.starts.mu.Lock()
	defer e.starts.mu.Unlock()
	if e.starts.err != nil {
		e.t.Fatalf("engine events: %v", e.starts.err)
	}
	out := slices.Clone(e.starts.byID[id])
	if len(out) == 0 {
		out = []time.Time{{}}
	}
	return out
}

// startLog records the engine's start events of one instance's containers,
// as they happen. (Asking the engine afterwards would not do: it keeps only
// its last 256 events, and parallel tests make many.)
type startLog struct {
	mu   gosync.Mutex
	byID map[string][]time.Time
	err  error
}

func watchStarts(t *testing.T, cli *client.Client, instance string, since time.Time) *startLog {
	l := &startLog{byID: map[string][]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	msgs, errs := cli.Events(ctx, dockerevents.ListOptions{
		Since: unixString(since),
		Filters: filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "start"),
			filters.Arg("label", hruntime.LabelInstance+"="+instance)),
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-msgs:
				l.mu.Lock()
				l.byID[m.Actor.ID] = append(l.byID[m.Actor.ID], time.Unix(0, m.TimeNano))
				l.mu.Unlock()
			case err := <-errs:
				if ctx.Err() == nil {
					l.mu.Lock()
					l.err = err
					l.mu.Unlock()
				}
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l
}

func unixString(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

const pausePod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %[2]s
    command: [/demo, pause]
`

// Must show 8 (engine): once 50 pods run, a sync that changes nothing
// makes exactly one engine call, the list.
func TestNoopSyncOnEngineIsOneListCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var pods []hsync.Pod
	for i := range 50 {
		pods = append(pods, e.pod(pausePod, fmt.Sprintf("p%02d", i), e.img))
	}
	e.set(pods...)
	e.sync()
	cs := e.containers()
	if len(cs) != 50 {
		t.Fatalf("%d containers, want 50", len(cs))
	}
	for k, c := range cs {
		if c.State != hruntime.StateRunning {
			t.Errorf("%s is %s", k, c.State)
		}
	}
	for round := range 2 {
		e.counting.Reset()
		e.sync()
		if got := e.counting.Counts(); len(got) != 1 || got["List"] != 1 {
			t.Errorf("no-op sync %d of 50 pods: engine calls %v, want exactly one List", round, got)
		}
		t.Logf("no-op sync %d of 50 pods took %s", round, e.s.Report().LastSync.Duration)
	}
	if now := ids(e.containers()); !mapsEqual(ids(cs), now) {
		t.Errorf("no-op syncs replaced %v", changed(ids(cs), now))
	}
	for _, p := range e.s.Report().Pods {
		if p.Phase != hsync.PhaseRunning {
			t.Errorf("pod %s: %s", p.ID, p.Phase)
		}
	}
}

// Must show 9 (convergence): the time from the start of a sync until N
// single-container pods run on the engine, from nothing.
func BenchmarkConverge(b *testing.B) {
	img := dockertest.TestImage(b)
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			inst := dockertest.Instance(b)
			cli := dockertest.Client(b)
			ctx := b.Context()
			rt, err := hruntime.New(ctx, "", inst, nil) // no debug log in the benchmark's output
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = rt.Close() })
			var pods []hsync.Pod
			for i := range n {
				pods = append(pods, decodePod(b, fmt.Sprintf(pausePod, fmt.Sprintf("p%02d", i), img)))
			}
			for b.Loop() {
				b.StopTimer()
				s, err := hsync.New(rt, hsync.Options{
					Instance: inst, InfraImage: img, InfraCommand: []string{"/demo", "pause"},
					Interval: time.Second, Concurrency: 4, Prune: true, StateDir: b.TempDir(),
				}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
				if err != nil {
					b.Fatal(err)
				}
				s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
				b.StartTimer()
				if err := s.SyncOnce(ctx); err != nil {
					b.Fatal(err)
				}
				list, err := rt.List(ctx)
				if err != nil {
					b.Fatal(err)
				}
				running := 0
				for _, c := range list {
					if c.State == hruntime.StateRunning {
						running++
					}
				}
				if running != n {
					b.Fatalf("%d of %d containers running after the sync", running, n)
				}
				b.StopTimer()
				if err := dockertest.RemoveInstance(ctx, cli, inst); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(n), "ms/pod")
		})
	}
}

// An infra container the engine restarted while hostlet was down (its
// process crashed) left the app containers in a namespace that is gone: a
// hostlet starting up notices on adoption and recovers the pod.
func TestAdoptionRecoversPodWhoseInfraRestarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pa, pb := testkit.FreePort(t), testkit.FreePort(t)
	pod := e.pod(twoContainerPod, "web", e.img, pa, pb)
	e.set(pod)
	e.sync()
	checkPodNetwork(t, time.Minute, pa, pb)
	before := e.containers()

	// hostlet is down (no syncer runs) when the infra process crashes.
	infra := before["web/"+hruntime.InfraName]
	st := e.inspect(infra.ID).State
	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the infra process %d: %v", st.Pid, err)
	}
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		now := e.inspect(infra.ID)
		return now.State.Running && now.State.StartedAt != st.StartedAt,
			fmt.Sprintf("infra: running %v, started at %s (was %s)", now.State.Running, now.State.StartedAt, st.StartedAt)
	})

	// A new hostlet starts: one sync.
	s2 := e.newSyncer()
	s2.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s2.SyncOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	checkPodNetwork(t, 30*time.Second, pa, pb)
	if now := ids(e.containers()); !mapsEqual(ids(before), now) {
		t.Errorf("containers replaced: %v; want the app containers restarted", changed(ids(before), now))
	}
	// A hostlet starting up with a healthy pod restarts nothing.
	s3 := e.newSyncer()
	s3.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	e.counting.Reset()
	if err := s3.SyncOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.counting.Counts(); got["Start"]+got["Stop"]+got["Create"]+got["Remove"] != 0 {
		t.Errorf("adopting a healthy pod made calls %v", got)
	}
}
