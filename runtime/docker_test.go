package runtime_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// Integration tests against the real engine. Every test runs under its own
// instance label; dockertest removes what it leaves behind.

func TestMain(m *testing.M) { dockertest.Main(m) }

// testCtx bounds a test's engine calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// spec returns a container spec for the demo image, labelled and named
// as hostlet labels and names its containers (unique on the engine: the
// name's sum covers the test's instance).
func spec(t *testing.T, d *hruntime.Docker, pod, name string) hruntime.ContainerSpec {
	const hash = "v1:test"
	return hruntime.ContainerSpec{
		Name:  hruntime.ContainerName(d.Instance(), pod, name, hash),
		Image: dockertest.TestImage(t),
		Labels: map[string]string{
			hruntime.LabelManaged:   "true",
			hruntime.LabelInstance:  d.Instance(),
			hruntime.LabelPod:       pod,
			hruntime.LabelContainer: name,
			hruntime.LabelHash:      hash,
		},
		RestartPolicy: hruntime.RestartNo,
		StopTimeout:   5 * time.Second,
	}
}

func mustRun(t *testing.T, ctx context.Context, d *hruntime.Docker, s hruntime.ContainerSpec) string {
	t.Helper()
	id, err := d.Create(ctx, s)
	if err != nil {
		t.Fatalf("Create(%s): %v", s.Name, err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatalf("Start(%s): %v", s.Name, err)
	}
	return id
}

func find(list []hruntime.Container, id string) (hruntime.Container, bool) {
	for _, c := range list {
		if c.ID == id {
			return c, true
		}
	}
	return hruntime.Container{}, false
}

// waitState waits until the container's list entry is in state.
func waitState(t *testing.T, ctx context.Context, d *hruntime.Docker, id, state string) hruntime.Container {
	t.Helper()
	var found hruntime.Container
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		list, err := d.List(ctx)
		if err != nil {
			return false, err.Error()
		}
		c, ok := find(list, id)
		if !ok {
			return false, "container " + id + " not listed"
		}
		found = c
		return c.State == state, fmt.Sprintf("state %q (%s), want %q", c.State, c.Status, state)
	})
	return found
}

func TestLifecycleAndInstanceFilter(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	other := dockertest.DockerFor(t, dockertest.Instance(t))

	s := spec(t, d, "web", "app")
	s.Env = []string{"MESSAGE=hi"}
	id := mustRun(t, ctx, d, s)

	// Another instance's container, and one of ours without the managed
	// label: neither is listed.
	otherID, err := other.Create(ctx, spec(t, other, "web", "app"))
	if err != nil {
		t.Fatal(err)
	}
	unmanaged := spec(t, d, "web", "unmanaged")
	delete(unmanaged.Labels, hruntime.LabelManaged)
	if _, err := d.Create(ctx, unmanaged); err != nil {
		t.Fatal(err)
	}

	list, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("List = %+v, want exactly our one managed container", list)
	}
	c := list[0]
	if c.ID != id || c.Name != s.Name || c.State != hruntime.StateRunning || !c.Running() ||
		c.Pod() != "web" || c.Slot() != "app" || c.Image != s.Image || c.IP == "" ||
		time.Since(c.Created) > time.Minute {
		t.Errorf("listed container = %+v", c)
	}
	otherList, err := other.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(otherList) != 1 || otherList[0].ID != otherID || otherList[0].State != hruntime.StateCreated {
		t.Errorf("other instance lists %+v, want only its created container", otherList)
	}

	det, err := d.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if det.ID != id || !det.Running || det.StartedAt.IsZero() || !det.FinishedAt.IsZero() || det.RestartCount != 0 || det.IP != c.IP {
		t.Errorf("Inspect = %+v, want the listed address %s too", det, c.IP)
	}
	if det.StopTimeout != s.StopTimeout || det.RestartPolicy != hruntime.RestartNo {
		t.Errorf("Inspect: stop timeout %s, restart policy %q, want %s and %q as created", det.StopTimeout, det.RestartPolicy, s.StopTimeout, hruntime.RestartNo)
	}

	if _, err := d.Create(ctx, s); !hruntime.IsConflict(err) {
		t.Errorf("Create with a taken name: %v, want ErrConflict", err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Errorf("Start of a running container: %v", err)
	}

	// The grace period is long: exit code 0 (not 137) shows the container
	// got SIGTERM and exited by itself, with no timing assumptions.
	if err := d.Stop(ctx, id, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	c = waitState(t, ctx, d, id, hruntime.StateExited)
	if c.ExitCode != 0 {
		t.Errorf("exit code after SIGTERM = %d (%s), want 0", c.ExitCode, c.Status)
	}
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("Stop of a stopped container: %v", err)
	}

	if err := d.Restart(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, d, id, hruntime.StateRunning)

	if err := d.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if list, err := d.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after Remove = %+v, %v; want empty", list, err)
	}
	if err := d.Remove(ctx, id); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := d.Inspect(ctx, id); !hruntime.IsNotFound(err) {
		t.Errorf("Inspect after Remove: %v, want ErrNotFound", err)
	}
}

func TestMissingContainer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	const id = "hostlet-test-no-such-container"
	if err := d.Remove(ctx, id); err != nil {
		t.Errorf("Remove of a missing container: %v", err)
	}
	for name, err := range map[string]error{
		"Inspect": func() error { _, err := d.Inspect(ctx, id); return err }(),
		"Start":   d.Start(ctx, id),
		"Stop":    d.Stop(ctx, id, time.Second),
		"Exec":    func() error { _, err := d.Exec(ctx, id, []string{"/demo"}); return err }(),
	} {
		if !hruntime.IsNotFound(err) || !strings.Contains(err.Error(), id) {
			t.Errorf("%s of a missing container: %v, want ErrNotFound naming it", name, err)
		}
	}
	s := spec(t, d, "web", "app")
	s.Image = "hostlet-test-absent.invalid/x:1"
	if _, err := d.Create(ctx, s); !hruntime.IsNotFound(err) {
		t.Errorf("Create from an absent image: %v, want ErrNotFound", err)
	}
}

// TestArgsKeepTheImageEntrypoint: args alone replace the image's CMD and
// run after its ENTRYPOINT (/demo), as Kubernetes' args do.
func TestArgsKeepTheImageEntrypoint(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)
	s := spec(t, d, "args", "app")
	s.Args = []string{"-listen", ":9091"}
	s.Env = []string{"MESSAGE=args"}
	s.Ports = []hruntime.Port{{ContainerPort: 9091, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	id := mustRun(t, ctx, d, s)
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", port), "", "MESSAGE=args")
	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(raw.Config.Entrypoint, " ") + " | " + strings.Join(raw.Config.Cmd, " "); got != "/demo | -listen :9091" {
		t.Errorf("entrypoint | cmd = %q, want %q", got, "/demo | -listen :9091")
	}
}

func TestPortsAndResources(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)
	s := spec(t, d, "web", "app")
	s.Command = []string{"/demo", "-listen", ":9090"}
	s.Env = []string{"MESSAGE=published"}
	s.Ports = []hruntime.Port{{ContainerPort: 9090, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	s.Memory = 64 << 20
	s.CPUShares = 256
	s.StopTimeout = 3 * time.Second
	s.RestartPolicy = hruntime.RestartOnFailure
	id := mustRun(t, ctx, d, s)

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", base+"/", "", "MESSAGE=published")
	if code, body, err := testkit.HTTP("POST", base+"/alloc?mb=8", ""); err != nil || code != 200 {
		t.Errorf("alloc within the memory limit: %d %q %v", code, body, err)
	}
	if code, body, err := testkit.HTTP("POST", base+"/unhealthy", ""); err != nil || code != 200 {
		t.Errorf("POST /unhealthy: %d %q %v", code, body, err)
	}
	if code, _, err := testkit.HTTP("GET", base+"/healthz", ""); err != nil || code != 500 {
		t.Errorf("healthz after /unhealthy: %d %v, want 500", code, err)
	}

	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	hc, cfg := raw.HostConfig, raw.Config
	if hc.Memory != 64<<20 || hc.CPUShares != 256 || string(hc.RestartPolicy.Name) != "on-failure" ||
		hc.RestartPolicy.MaximumRetryCount != 0 {
		t.Errorf("host config: memory %d, shares %d, restart %+v", hc.Memory, hc.CPUShares, hc.RestartPolicy)
	}
	if cfg.StopTimeout == nil || *cfg.StopTimeout != 3 || strings.Join(cfg.Entrypoint, " ") != "/demo -listen :9090" || len(cfg.Cmd) != 0 {
		t.Errorf("config: stop timeout %v, entrypoint %q, cmd %q", cfg.StopTimeout, cfg.Entrypoint, cfg.Cmd)
	}

	// A failing exit makes the engine restart it (restart policy on-failure).
	if code, body, err := testkit.HTTP("POST", base+"/exit?code=5", ""); err != nil || code != 200 {
		t.Fatalf("POST /exit: %d %q %v", code, body, err)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		det, err := d.Inspect(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		return det.RestartCount >= 1, fmt.Sprintf("restart count %d after exit 5, want >= 1", det.RestartCount)
	})
}

func TestSharedNetworkNamespace(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)

	infra := spec(t, d, "pod", hruntime.InfraName)
	infra.Command = []string{"/demo", "pause"}
	infra.Ports = []hruntime.Port{{ContainerPort: 8081, HostPort: port, HostIP: "127.0.0.1"}}
	infraID := mustRun(t, ctx, d, infra)

	a := spec(t, d, "pod", "a")
	a.NetworkMode = "container:" + infraID
	a.Env = []string{"LISTEN=127.0.0.1:8080", "MESSAGE=from-a"}
	// Ports on a container that joins a namespace are the infra's business;
	// Docker would refuse them.
	a.Ports = []hruntime.Port{{ContainerPort: 8080, HostPort: testkit.FreePort(t)}}
	aID := mustRun(t, ctx, d, a)

	b := spec(t, d, "pod", "b")
	b.NetworkMode = "container:" + infraID
	b.Env = []string{"LISTEN=:8081"}
	mustRun(t, ctx, d, b)

	// b (published through the infra container) reaches a on localhost.
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://localhost:8080/", port), "", "MESSAGE=from-a")

	list, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := find(list, aID); !ok || c.IP != "" {
		t.Errorf("joined container listed as %+v, want no IP of its own", c)
	}
	if c, ok := find(list, infraID); !ok || c.IP == "" || c.Slot() != hruntime.InfraName {
		t.Errorf("infra container listed as %+v, want an IP and the POD slot", c)
	}
	if err := d.Stop(ctx, infraID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if c := waitState(t, ctx, d, infraID, hruntime.StateExited); c.ExitCode != 0 {
		t.Errorf("demo pause exit code after SIGTERM = %d, want 0", c.ExitCode)
	}
}

func TestVolumes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	vol := "hostlet_" + d.Instance() + "_pod_data"
	for range 2 {
		if err := d.EnsureVolume(ctx, vol, map[string]string{hruntime.LabelPod: "pod", hruntime.LabelVolume: "data"}); err != nil {
			t.Fatalf("EnsureVolume: %v", err)
		}
	}
	if vols, err := d.ListVolumes(ctx); err != nil || len(vols) != 1 || vols[0] != vol {
		t.Fatalf("ListVolumes = %v, %v; want [%s]", vols, err, vol)
	}
	other := dockertest.DockerFor(t, dockertest.Instance(t))
	if err := other.EnsureVolume(ctx, vol, nil); !hruntime.IsConflict(err) {
		t.Errorf("EnsureVolume of another instance's volume: %v, want ErrConflict", err)
	}
	if vols, err := other.ListVolumes(ctx); err != nil || len(vols) != 0 {
		t.Errorf("other instance lists volumes %v, %v; want none", vols, err)
	}

	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "host.txt"), []byte("from host"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string) (id, base string) {
		port := testkit.FreePort(t)
		s := spec(t, d, "pod", name)
		s.Ports = []hruntime.Port{{ContainerPort: 8080, HostPort: port, HostIP: "127.0.0.1"}}
		s.Mounts = []hruntime.Mount{
			{Type: hruntime.MountVolume, Source: vol, Target: "/data"},
			{Type: hruntime.MountBind, Source: hostDir, Target: "/host", ReadOnly: true},
		}
		id = mustRun(t, ctx, d, s)
		base = fmt.Sprintf("http://127.0.0.1:%d", port)
		testkit.WaitHTTP(t, 30*time.Second, "GET", base+"/healthz", "", "ok")
		return id, base
	}
	id, base := run("first")
	if code, body, err := testkit.HTTP("POST", base+"/write?path=/data/x", "persist"); err != nil || code != 200 {
		t.Fatalf("write to volume: %d %q %v", code, body, err)
	}
	if body := testkit.WaitHTTP(t, 30*time.Second, "GET", base+"/read?path=/host/host.txt", "", "from host"); body != "from host" {
		t.Errorf("bind mount read %q", body)
	}
	if code, body, err := testkit.HTTP("POST", base+"/write?path=/host/y", "nope"); err != nil || code != 500 || !strings.Contains(body, "read-only") {
		t.Errorf("write to read-only bind mount: %d %q %v; want 500 read-only file system", code, body, err)
	}

	if err := d.RemoveVolume(ctx, vol); !hruntime.IsConflict(err) {
		t.Errorf("RemoveVolume of a volume in use: %v, want ErrConflict", err)
	}
	// The volume outlives its container: a recreated container sees the data.
	if err := d.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, base = run("second")
	testkit.WaitHTTP(t, 30*time.Second, "GET", base+"/read?path=/data/x", "", "persist")

	if err := dockertest.RemoveInstance(ctx, dockertest.Client(t), "no-such-instance"); err != nil {
		t.Fatal(err)
	}
	list, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if err := d.Remove(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.RemoveVolume(ctx, vol); err != nil {
		t.Fatalf("RemoveVolume: %v", err)
	}
	if vols, err := d.ListVolumes(ctx); err != nil || len(vols) != 0 {
		t.Errorf("ListVolumes after remove = %v, %v", vols, err)
	}
	if err := d.RemoveVolume(ctx, vol); err != nil {
		t.Errorf("RemoveVolume of a missing volume: %v", err)
	}
}

func TestEnsureImage(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	img := dockertest.TestImage(t)

	const absent = "hostlet-test-absent.invalid/x:1"
	err := d.EnsureImage(ctx, absent, hruntime.PullNever)
	if !errors.Is(err, hruntime.ErrImageNeverPull) || !hruntime.IsNotFound(err) ||
		err.Error() != "image "+absent+" not present and imagePullPolicy is Never" {
		t.Errorf("Never, absent: %v", err)
	}
	// The test image exists only locally: a pull would fail.
	for _, policy := range []string{hruntime.PullNever, hruntime.PullIfNotPresent} {
		if err := d.EnsureImage(ctx, img, policy); err != nil {
			t.Errorf("%s, present: %v", policy, err)
		}
	}
	if err := d.EnsureImage(ctx, img, "Sometimes"); err == nil {
		t.Error("unknown policy accepted")
	}

	const nonexistent = "hostlet-test-nonexistent.invalid/x:1"
	// Concurrent pulls of one image share one request and all see its error.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			policy := hruntime.PullAlways
			if i%2 == 1 {
				policy = hruntime.PullIfNotPresent
			}
			errs[i] = d.EnsureImage(ctx, nonexistent, policy)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, hruntime.ErrImagePull) || !strings.Contains(err.Error(), "pull image "+nonexistent+": ") ||
			!strings.Contains(err.Error(), "hostlet-test-nonexistent.invalid") {
			t.Errorf("pull %d of a nonexistent image: %v, want ErrImagePull with the engine's message", i, err)
		}
	}
	t.Logf("engine's pull error: %v", errs[0])

	// A pull whose caller goes away returns the caller's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.EnsureImage(cctx, nonexistent, hruntime.PullAlways); !errors.Is(err, context.Canceled) {
		t.Errorf("pull with a cancelled context: %v", err)
	}
}

func TestLoadAndRemoveImage(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	err := d.LoadImage(ctx, strings.NewReader("this is not a tar archive"))
	if err == nil {
		t.Fatal("LoadImage of garbage: no error")
	}
	t.Logf("engine's load error: %v", err)
	if err := d.RemoveImage(ctx, "hostlet-test-absent.invalid/x:1"); !hruntime.IsNotFound(err) {
		t.Errorf("RemoveImage of an absent image: %v, want ErrNotFound", err)
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	s := spec(t, d, "pod", "app")
	s.Command = []string{"/demo", "pause"}
	id := mustRun(t, ctx, d, s)

	for _, tc := range []struct {
		cmd  []string
		want int
	}{
		{[]string{"/demo", "probe-ok"}, 0},
		{[]string{"/demo", "probe-fail"}, 1},
	} {
		code, err := d.Exec(ctx, id, tc.cmd)
		if err != nil || code != tc.want {
			t.Errorf("Exec(%q) = %d, %v; want %d", tc.cmd, code, err, tc.want)
		}
	}
	code, err := d.Exec(ctx, id, []string{"/no/such/binary"})
	t.Logf("Exec of a missing binary: %d, %v", code, err)
	if err == nil && code == 0 {
		t.Error("Exec of a missing binary succeeded")
	}

	// A command that never ends returns at the deadline.
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := d.Exec(dctx, id, []string{"/demo", "pause"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec past its deadline: %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Exec past its deadline took %s", took)
	}

	if _, err := d.Exec(ctx, id, nil); err == nil {
		t.Error("Exec of an empty command: no error")
	}
	if err := d.Stop(ctx, id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, id, []string{"/demo", "probe-ok"}); !hruntime.IsConflict(err) {
		t.Errorf("Exec in a stopped container: %v, want ErrConflict", err)
	}
}

func TestEventsAndExitCodes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	other := dockertest.DockerFor(t, dockertest.Instance(t))

	evCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := d.Events(evCtx)

	// The other instance's container dies first; its events must not reach us.
	otherSpec := spec(t, other, "pod", "app")
	otherSpec.Env = []string{"EXIT_AFTER=10ms", "EXIT_CODE=9"}
	otherID := mustRun(t, ctx, other, otherSpec)

	s := spec(t, d, "pod", "app")
	s.Env = []string{"EXIT_AFTER=300ms", "EXIT_CODE=7"}
	id := mustRun(t, ctx, d, s)

	deadline := time.After(30 * time.Second)
	var seen []string
wait:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed early")
			}
			seen = append(seen, ev.Action)
			if ev.ContainerID == otherID {
				t.Errorf("got another instance's event %+v", ev)
			}
			if ev.ContainerID == id && ev.Action == "die" {
				if ev.ExitCode != 7 || ev.Labels[hruntime.LabelPod] != "pod" || time.Since(ev.Time) > time.Minute {
					t.Errorf("die event = %+v, want exit code 7 and our labels", ev)
				}
				break wait
			}
		case <-deadline:
			t.Fatalf("no die event within 30 s; saw %v", seen)
		}
	}
	if !strings.Contains(strings.Join(seen, ","), "start") {
		t.Errorf("saw %v, want start before die", seen)
	}

	c := waitState(t, ctx, d, id, hruntime.StateExited)
	if c.ExitCode != 7 {
		t.Errorf("listed exit code = %d (%s), want 7", c.ExitCode, c.Status)
	}
	det, err := d.Inspect(ctx, id)
	if err != nil || det.ExitCode != 7 || det.Running || det.FinishedAt.IsZero() {
		t.Errorf("Inspect = %+v, %v; want exited with 7", det, err)
	}

	stop()
	testkit.WaitFor(t, 5*time.Second, func() (bool, string) {
		select {
		case _, ok := <-events:
			return !ok, "event channel still open after cancel"
		default:
			return false, "event channel still open after cancel"
		}
	})
}

func TestRestartPolicyOnFailure(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	var ids []string
	for i := range 2 {
		s := spec(t, d, "pod", fmt.Sprintf("crash%d", i))
		s.Env = []string{fmt.Sprintf("EXIT_AFTER=%dms", 50+100*i), "EXIT_CODE=2"}
		s.RestartPolicy = hruntime.RestartOnFailure
		ids = append(ids, mustRun(t, ctx, d, s))
	}
	for _, id := range ids {
		testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
			det, err := d.Inspect(ctx, id)
			if err != nil {
				return false, err.Error()
			}
			return det.RestartCount >= 1, fmt.Sprintf("restart count %d, want >= 1", det.RestartCount)
		})
	}
	// Removing crash-looping containers races with the engine restarting
	// them; Remove must still get rid of them.
	for _, id := range ids {
		if err := d.Remove(ctx, id); err != nil {
			t.Errorf("Remove of a crash-looping container: %v", err)
		}
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		list, err := d.List(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(list) == 0, fmt.Sprintf("%d containers still listed after Remove: %+v", len(list), list)
	})
}

// A stopped container's restart policy can be set to none (a recreate
// keeps the container it replaced, stopped, until the new one started:
// an engine restart must not start it again), and stopping it again is
// not an error.
func TestNoRestartClearsTheRestartPolicy(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	s := spec(t, d, "pod", "kept")
	s.RestartPolicy = hruntime.RestartAlways
	id := mustRun(t, ctx, d, s)
	t.Cleanup(func() { _ = d.Remove(context.Background(), id) })
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.NoRestart(ctx, id); err != nil {
		t.Fatalf("NoRestart of a stopped container: %v", err)
	}
	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p := raw.HostConfig.RestartPolicy; p.Name != "no" && p.Name != "" {
		t.Errorf("restart policy %+v after NoRestart, want none", p)
	}
	// A recreate stops it again once its policy is cleared (an engine
	// restart in between would have started it): of a stopped container,
	// not an error.
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Errorf("Stop of the stopped container: %v", err)
	}
	if err := d.NoRestart(ctx, "no-such-container"); !hruntime.IsNotFound(err) {
		t.Errorf("NoRestart of a missing container: %v, want not found", err)
	}
}

// A container whose restart policy was cleared can get its own back (a
// reverted change: the container kept for removal is wanted once more,
// and the engine must restart it after a crash or a reboot again).
func TestRestoreRestartPutsThePolicyBack(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	tests := []struct{ policy, want string }{
		{hruntime.RestartAlways, "always"},
		{hruntime.RestartOnFailure, "on-failure"},
	}
	for _, tt := range tests {
		s := spec(t, d, "pod", "restored-"+tt.want)
		s.RestartPolicy = tt.policy
		id, err := d.Create(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Remove(context.Background(), id) })
		if err := d.NoRestart(ctx, id); err != nil {
			t.Fatalf("NoRestart: %v", err)
		}
		if err := d.RestoreRestart(ctx, id, tt.policy); err != nil {
			t.Fatalf("RestoreRestart %s: %v", tt.policy, err)
		}
		raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p := raw.HostConfig.RestartPolicy; string(p.Name) != tt.want {
			t.Errorf("restart policy %+v after RestoreRestart(%s), want %s", p, tt.policy, tt.want)
		}
	}
	if err := d.RestoreRestart(ctx, "no-such-container", hruntime.RestartAlways); !hruntime.IsNotFound(err) {
		t.Errorf("RestoreRestart of a missing container: %v, want not found", err)
	}
	if err := d.RestoreRestart(ctx, "no-such-container", "sometimes"); err == nil || hruntime.IsNotFound(err) {
		t.Errorf("RestoreRestart with an unknown policy: %v, want a refusal before the engine", err)
	}
}

// A network's bridge options reach the engine, or, on Podman, whose
// Docker-compatible API answers most of them with a warning only, are
// refused naming the option rather than dropped.
func TestNetworkBridgeOptions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	cli := dockertest.Client(t)
	t.Cleanup(func() { _ = dockertest.RemoveInstance(context.Background(), cli, d.Instance()) })
	name := d.Instance() + "_opts"
	opts := map[string]string{"com.docker.network.bridge.enable_icc": "false", "com.docker.network.driver.mtu": "1400"}
	err := d.EnsureNetwork(ctx, hruntime.NetworkSpec{Name: name, DriverOptions: opts}, nil)
	if dockertest.Engine(t).Podman() {
		if err == nil || !strings.Contains(err.Error(), "com.docker.network.bridge.enable_icc") {
			t.Errorf("EnsureNetwork with enable_icc on Podman: %v, want it refused naming the option", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := cli.NetworkInspect(ctx, name, network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range opts {
		if info.Options[k] != v {
			t.Errorf("network option %s = %q, want %q (all: %v)", k, info.Options[k], v, info.Options)
		}
	}
	// Made once; the same declaration finds it as declared.
	if err := d.EnsureNetwork(ctx, hruntime.NetworkSpec{Name: name, DriverOptions: opts}, nil); err != nil {
		t.Errorf("EnsureNetwork again: %v", err)
	}
}

// TestNetworks: a network hostlet makes (once, however often it is
// ensured), one made by someone else refused unless external, an external
// one that is not there; a container on three networks (joined at its
// create, or connected right after, as the engine's API allows) with its
// aliases and its address on each, reached by alias and by address from
// another container; RemoveNetwork leaves what is not the instance's and
// what is still used.
func TestNetworks(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	cli := dockertest.Client(t)
	own := d.Instance() + "_default"
	second := d.Instance() + "_back"
	foreign := d.Instance() + "_foreign"
	// A pool of its own per run (the engine refuses overlapping
	// subnets), for a fixed address on own.
	sum := sha256.Sum256([]byte("networks " + d.Instance()))
	subnet := fmt.Sprintf("10.%d.%d.0/24", 100+int(sum[0])%50, sum[1])
	apiAddr := strings.TrimSuffix(subnet, "0/24") + "42"
	for _, n := range []hruntime.NetworkSpec{{Name: own, Subnet: subnet}, {Name: own, Subnet: subnet}, {Name: second}} {
		if err := d.EnsureNetwork(ctx, n, map[string]string{"team": "shop"}); err != nil {
			t.Fatalf("EnsureNetwork(%s): %v", n.Name, err)
		}
	}
	if names, err := d.ListNetworks(ctx); err != nil || !slices.Equal(names, []string{second, own}) {
		t.Fatalf("ListNetworks: %v, %v; want %s and %s once each", names, err, second, own)
	}
	if _, err := cli.NetworkCreate(ctx, foreign, network.CreateOptions{Driver: "bridge"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.NetworkRemove(context.Background(), foreign) })
	if err := d.EnsureNetwork(ctx, hruntime.NetworkSpec{Name: foreign}, nil); !hruntime.IsConflict(err) {
		t.Errorf("EnsureNetwork of a network made by someone else: %v, want a conflict", err)
	}
	if err := d.EnsureNetwork(ctx, hruntime.NetworkSpec{Name: foreign, External: true}, nil); err != nil {
		t.Errorf("EnsureNetwork of it declared external: %v", err)
	}
	if err := d.EnsureNetwork(ctx, hruntime.NetworkSpec{Name: d.Instance() + "_nowhere", External: true}, nil); !hruntime.IsNotFound(err) {
		t.Errorf("EnsureNetwork of a missing external network: %v, want not found", err)
	}

	api := spec(t, d, "api", "app")
	api.Command = []string{"/demo", "-listen", ":9092"}
	api.Env = []string{"MESSAGE=from-api"}
	api.Networks = []hruntime.NetworkSpec{
		{Name: second, Aliases: []string{"api-back"}},
		{Name: own, Aliases: []string{"api", "api-v1"}, Subnet: subnet, IPv4Address: apiAddr},
		{Name: foreign, External: true},
	}
	apiID := mustRun(t, ctx, d, api)
	raw, err := cli.ContainerInspect(ctx, apiID)
	if err != nil {
		t.Fatal(err)
	}
	checkEndpoints(t, "api", raw.NetworkSettings.Networks, api.Networks)
	port := testkit.FreePort(t)
	web := spec(t, d, "web", "app")
	web.Command = []string{"/demo", "-listen", ":9093"}
	web.Networks = []hruntime.NetworkSpec{{Name: own, Aliases: []string{"web"}}}
	web.Ports = []hruntime.Port{{ContainerPort: 9093, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	mustRun(t, ctx, d, web)
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://api:9092/", port), "", "MESSAGE=from-api")
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://api-v1:9092/", port), "", "MESSAGE=from-api")
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://%s:9092/", port, apiAddr), "", "MESSAGE=from-api")

	if err := d.RemoveNetwork(ctx, own); !hruntime.IsConflict(err) {
		t.Errorf("RemoveNetwork of a network in use: %v, want a conflict", err)
	}
	if err := d.RemoveNetwork(ctx, foreign); err != nil {
		t.Errorf("RemoveNetwork of a network not the instance's: %v, want it left without error", err)
	}
	if _, err := cli.NetworkInspect(ctx, foreign, network.InspectOptions{}); err != nil {
		t.Errorf("the foreign network is gone: %v", err)
	}
	if err := dockertest.RemoveInstance(ctx, cli, d.Instance()); err != nil {
		t.Fatal(err)
	}
	if names, err := d.ListNetworks(ctx); err != nil || len(names) != 0 {
		t.Errorf("networks left after RemoveInstance: %v, %v", names, err)
	}
}

// checkEndpoints checks that container name is on exactly the networks
// nets, with each network's aliases there and on no other (the engine
// may add the short container ID), and its fixed IPv4 address where it
// has one (the address it got: Podman does not report the IPAMConfig
// asked).
func checkEndpoints(t *testing.T, name string, got map[string]*network.EndpointSettings, nets []hruntime.NetworkSpec) {
	t.Helper()
	var want []string
	for _, n := range nets {
		want = append(want, n.Name)
	}
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, slices.Sorted(slices.Values(want))) {
		t.Errorf("%s is on %v, want %v", name, names, want)
	}
	for _, n := range nets {
		ep := got[n.Name]
		if ep == nil {
			continue
		}
		if n.IPv4Address != "" && ep.IPAddress != n.IPv4Address {
			t.Errorf("%s's endpoint on %s: %+v, want address %s", name, n.Name, ep, n.IPv4Address)
		}
		for _, other := range nets {
			for _, a := range other.Aliases {
				switch on, want := slices.Contains(ep.Aliases, a), other.Name == n.Name; {
				case want && !on:
					t.Errorf("%s's aliases on %s: %q, want %q among them", name, n.Name, ep.Aliases, a)
				case on && !want:
					t.Errorf("%s's aliases on %s: %q, want no %q (its alias on %s)", name, n.Name, ep.Aliases, a, other.Name)
				}
			}
		}
	}
}

// TestVolumeListAndRemoval: Volumes lists the instance's volumes with who mounts them;
// RemoveOwnVolume leaves a volume in use and one not the instance's.
func TestVolumeListAndRemoval(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	cli := dockertest.Client(t)
	data := d.Instance() + "_data"
	if err := d.EnsureVolume(ctx, data, map[string]string{hruntime.LabelPersistent: "true"}); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckVolume(ctx, data); err != nil {
		t.Errorf("CheckVolume of a volume there: %v", err)
	}
	if err := d.CheckVolume(ctx, d.Instance()+"_nowhere"); !hruntime.IsNotFound(err) {
		t.Errorf("CheckVolume of a volume not there: %v, want not found", err)
	}
	foreign := d.Instance() + "_foreign"
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: foreign}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.VolumeRemove(context.Background(), foreign, true) })
	s := spec(t, d, "db", "app")
	s.Command = []string{"/demo", "pause"}
	s.Mounts = []hruntime.Mount{{Type: hruntime.MountVolume, Source: data, Target: "/data"}}
	id := mustRun(t, ctx, d, s)
	vols, err := d.Volumes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].Name != data || !vols[0].Persistent || len(vols[0].UsedBy) != 1 {
		t.Fatalf("Volumes: %+v, want %s, persistent, used by the container", vols, data)
	}
	if err := d.RemoveOwnVolume(ctx, data); !hruntime.IsConflict(err) {
		t.Errorf("RemoveOwnVolume of a volume in use: %v, want a conflict", err)
	}
	if err := d.RemoveOwnVolume(ctx, foreign); !hruntime.IsConflict(err) {
		t.Errorf("RemoveOwnVolume of a volume not the instance's: %v, want a conflict", err)
	}
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveOwnVolume(ctx, data); err != nil {
		t.Errorf("RemoveOwnVolume of an unused volume: %v", err)
	}
	if err := d.CheckVolume(ctx, data); !hruntime.IsNotFound(err) {
		t.Errorf("the volume is still there: %v", err)
	}
}

// TestProcessSettings: user, a read-only root, an init process, the stop
// signal, /dev/shm's size, a CPU limit, a pids limit, supplementary
// groups and the runtime reach the engine as set.
func TestProcessSettings(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	s := spec(t, d, "proc", "app")
	s.Command = []string{"/demo", "pause"}
	s.User, s.ReadOnly, s.Init, s.StopSignal, s.ShmSize, s.NanoCPUs = "1000:1000", true, true, "SIGINT", 128<<20, 500_000_000
	s.PidsLimit, s.GroupAdd, s.Runtime = 77, []string{"44", "4242"}, "runc"
	if d.Engine().Podman() {
		s.Runtime = "" // its default is crun; runc may not be installed
	}
	s.Healthcheck = &hruntime.HealthSpec{Command: []string{"/demo", "probe-ok"}, Interval: time.Second, Retries: 2}
	id := mustRun(t, ctx, d, s)
	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	hc := raw.HostConfig
	// Podman reports the stop signal by its number.
	stopSignal := raw.Config.StopSignal
	if stopSignal == "2" && d.Engine().Podman() {
		stopSignal = "SIGINT"
	}
	if raw.Config.User != "1000:1000" || !hc.ReadonlyRootfs || hc.Init == nil || !*hc.Init || stopSignal != "SIGINT" || hc.ShmSize != 128<<20 || hc.NanoCPUs != 500_000_000 {
		t.Errorf("user %q readOnly %v init %v stopSignal %q shm %d nanoCPUs %d", raw.Config.User, hc.ReadonlyRootfs, hc.Init, raw.Config.StopSignal, hc.ShmSize, hc.NanoCPUs)
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != 77 {
		t.Errorf("pids limit %v, want 77", hc.PidsLimit)
	}
	if !slices.Equal(hc.GroupAdd, []string{"44", "4242"}) {
		t.Errorf("supplementary groups %v, want 44 and 4242", hc.GroupAdd)
	}
	if s.Runtime != "" && hc.Runtime != s.Runtime {
		t.Errorf("runtime %q, want %q", hc.Runtime, s.Runtime)
	}
	if h := raw.Config.Healthcheck; h == nil || strings.Join(h.Test, " ") != "CMD /demo probe-ok" || h.Retries != 2 {
		t.Errorf("healthcheck %+v", h)
	}
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		list, err := d.List(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range list {
			if c.ID == id {
				return c.Health == hruntime.HealthHealthy, fmt.Sprintf("health %q (status %q)", c.Health, c.Status)
			}
		}
		return false, "not listed"
	})
}

// TestNamespaceSettings: a container holding its network namespace gets
// the hostname, the extra hosts and the DNS settings given.
func TestNamespaceSettings(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)
	s := spec(t, d, "ns", "app")
	s.Command = []string{"/demo", "-listen", ":9094"}
	s.Ports = []hruntime.Port{{ContainerPort: 9094, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	s.Hostname, s.ExtraHosts, s.DNS, s.DNSSearch = "web1", []string{"db.internal:10.0.0.5"}, []string{"10.0.0.53"}, []string{"example.org"}
	mustRun(t, ctx, d, s)
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", base, "", "hello from web1")
	testkit.WaitHTTP(t, 10*time.Second, "GET", base+"read?path=/etc/hosts", "", "10.0.0.5\tdb.internal")
	testkit.WaitHTTP(t, 10*time.Second, "GET", base+"read?path=/etc/resolv.conf", "", "nameserver 10.0.0.53")
}

// TestFullyQualifiedHostnameAndHostGateway: a fully qualified hostname
// and a domain name are set as given (Compose's hostname: mail.example.com
// and domainname), and an extra host at host-gateway gets the engine's
// address for the host in /etc/hosts.
func TestFullyQualifiedHostnameAndHostGateway(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)
	s := spec(t, d, "fqdn", "app")
	s.Command = []string{"/demo", "-listen", ":9094"}
	s.Ports = []hruntime.Port{{ContainerPort: 9094, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	s.Hostname, s.Domainname = "mail.example.com", "example.com"
	s.ExtraHosts = []string{"host.docker.internal:host-gateway"}
	if d.Engine().Podman() {
		// Podman's compatible API drops a domain name: the create is
		// refused naming it (docs/engines.md), never run without it.
		if _, err := d.Create(ctx, s); !errors.Is(err, hruntime.ErrSettingIgnored) || !strings.Contains(err.Error(), "domainname") {
			t.Fatalf("create with a domain name on Podman: %v, want ErrSettingIgnored naming domainname", err)
		}
		s.Domainname = ""
	}
	id := mustRun(t, ctx, d, s)
	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Config.Hostname != "mail.example.com" || raw.Config.Domainname != s.Domainname {
		t.Errorf("hostname %q domainname %q, want mail.example.com and example.com", raw.Config.Hostname, raw.Config.Domainname)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", base, "", "hello from mail.example.com")
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		_, body, err := testkit.HTTP("GET", base+"read?path=/etc/hosts", "")
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(body, "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && slices.Contains(f[1:], "host.docker.internal") {
				_, err := netip.ParseAddr(f[0])
				return err == nil, "host.docker.internal's address: " + line
			}
		}
		return false, "no host.docker.internal in /etc/hosts:\n" + body
	})
}

// TestLogOptionsForTheDefaultDriver: log options without a driver go to
// the engine's default driver (Docker's json-file on the engines of the
// tests; Podman's own), as docker run --log-opt without --log-driver
// does.
func TestLogOptionsForTheDefaultDriver(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	s := spec(t, d, "logopts", "app")
	s.Command = []string{"/demo", "pause"}
	s.LogOptions = map[string]string{"max-size": "1m", "max-file": "2"}
	id := mustRun(t, ctx, d, s)
	raw, err := dockertest.Client(t).ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	lc := raw.HostConfig.LogConfig
	if d.Engine().Podman() {
		// Its compatible inspect reports no log option, whatever was
		// applied: the driver is all there is to read.
		if lc.Type == "" {
			t.Errorf("log config %+v, want Podman's default driver", lc)
		}
		return
	}
	if lc.Type != "json-file" || lc.Config["max-size"] != "1m" {
		t.Errorf("log config %+v, want the engine's default driver (json-file) with max-size 1m", lc)
	}
}

// TestTmpfsMounts: tmpfs mounts reach the container with their size,
// mode and exec or noexec.
func TestTmpfsMounts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	port := testkit.FreePort(t)
	s := spec(t, d, "tmpfs", "app")
	s.Command = []string{"/demo", "-listen", ":9094"}
	s.Ports = []hruntime.Port{{ContainerPort: 9094, HostPort: port, Protocol: "TCP", HostIP: "127.0.0.1"}}
	s.Tmpfs = map[string]string{"/run": "size=16777216,mode=1750,exec", "/scratch": "noexec"}
	mustRun(t, ctx, d, s)
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", base, "", "hello from")
	_, mounts, err := testkit.HTTP("GET", base+"read?path=/proc/mounts", "")
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string][]string{}
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[2] == "tmpfs" {
			opts[f[1]] = strings.Split(f[3], ",")
		}
	}
	run, scratch := opts["/run"], opts["/scratch"]
	if !slices.Contains(run, "size=16384k") || !slices.Contains(run, "mode=1750") || slices.Contains(run, "noexec") {
		t.Errorf("/run mounted %v, want size=16384k, mode=1750, exec (not noexec)", run)
	}
	if scratch == nil || !slices.Contains(scratch, "noexec") {
		t.Errorf("/scratch mounted %v, want a tmpfs, noexec", scratch)
	}
}
