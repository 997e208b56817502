package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// hostletBin is the hostlet binary TestMain builds once for every test.
var hostletBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostlet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostletBin = filepath.Join(dir, "hostlet")
	if err := build(hostletBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	dockertest.Main(m, func() error { return removePauseImage(hostletBin) }, func() error { return os.RemoveAll(dir) })
}

// build builds hostlet as `make build` does, with a version unique to this
// test binary: the infra (pause) image hostlet builds from its own binary is
// then this run's alone, and removePauseImage may remove it.
func build(out string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace,nethttpomithttp2", "-ldflags", "-s -w -X main.version=e2e-"+hex.EncodeToString(b), "-o", out, "./cmd/hostlet")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build hostlet: %w\n%s", err, o)
	}
	return nil
}

// removePauseImage removes the infra image the hostlet binary built: every
// tag of it, one per instance (hostlet-pause:<binary>-<instance>, see
// internal/agent.PauseImage).
func removePauseImage(bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	prefix := "hostlet-pause:" + hex.EncodeToString(sum[:])[:12] + "-"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.ImageList(ctx, image.ListOptions{})
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	for _, im := range list {
		for _, ref := range im.RepoTags {
			if !strings.HasPrefix(ref, prefix) {
				continue
			}
			if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				return fmt.Errorf("remove %s: %w", ref, err)
			}
		}
	}
	return nil
}

// hostlet is one `hostlet run` subprocess.
type hostlet struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
	api  string
}

// setup writes a config for a fresh instance (a file source reading
// manifests from dir) and returns the config path.
type setup struct {
	instance  string
	cfg       string
	manifests string
	api       string
	logs      string
}

func newSetup(t *testing.T) setup {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the Docker engine (not run with -short)")
	}
	s := setup{
		instance:  dockertest.Instance(t),
		manifests: t.TempDir(),
		api:       fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		logs:      t.TempDir(),
	}
	dir := t.TempDir()
	s.cfg = filepath.Join(dir, "hostlet.yaml")
	cfg := fmt.Sprintf(`hostname: e2e
instance: %s
stateDir: %s
listen: %s
sync:
  interval: 1s
sources:
  - {name: files, type: file, path: %s}
log:
  level: debug
`, s.instance, filepath.Join(dir, "state"), s.api, s.manifests)
	if err := os.WriteFile(s.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s setup) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.manifests, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs `hostlet run --config ...`; a clean-up kills it if the test
// did not stop it.
func (s setup) start(t *testing.T, n int) *hostlet {
	t.Helper()
	logPath := filepath.Join(s.logs, fmt.Sprintf("hostlet-%d.log", n))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostletBin, "run", "--config", s.cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostlet{t: t, cmd: cmd, done: make(chan struct{}), api: "http://" + s.api}
	go func() {
		h.err = cmd.Wait()
		logFile.Close()
		close(h.done)
	}()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("hostlet run #%d log:\n%s", n, b)
		}
	})
	return h
}

// stop sends sig and waits for hostlet to exit.
func (h *hostlet) stop(sig syscall.Signal) error {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.done:
		return h.err
	case <-time.After(30 * time.Second):
		h.t.Fatalf("hostlet did not exit within 30s of %v", sig)
		return nil
	}
}

// statusDoc is the part of GET /status the tests read.
type statusDoc struct {
	LastSync struct {
		Start time.Time `json:"start"`
		Error string    `json:"error"`
	} `json:"lastSync"`
	Pods []struct {
		ID         string `json:"id"`
		Phase      string `json:"phase"`
		Reason     string `json:"reason"`
		Containers []struct {
			Name        string `json:"name"`
			State       string `json:"state"`
			Restarts    int    `json:"restarts"`
			ContainerID string `json:"containerID"`
		} `json:"containers"`
	} `json:"pods"`
}

func (h *hostlet) status() (statusDoc, error) {
	var d statusDoc
	code, body, err := testkit.HTTP("GET", h.api+"/status", "")
	if err != nil {
		return d, err
	}
	if code != 200 {
		return d, fmt.Errorf("GET /status: %d %s", code, body)
	}
	return d, json.Unmarshal([]byte(body), &d)
}

// waitRunning waits until hostlet reports every pod in ids Running after a
// sync that started after since.
func (h *hostlet) waitRunning(since time.Time, ids ...string) statusDoc {
	h.t.Helper()
	var d statusDoc
	testkit.WaitFor(h.t, 2*time.Minute, func() (bool, string) {
		select {
		case <-h.done:
			h.t.Fatalf("hostlet exited: %v", h.err)
		default:
		}
		var err error
		d, err = h.status()
		if err != nil {
			return false, err.Error()
		}
		if !d.LastSync.Start.After(since) {
			return false, fmt.Sprintf("last sync started %s, want after %s", d.LastSync.Start, since)
		}
		phases := map[string]string{}
		for _, p := range d.Pods {
			phases[p.ID] = p.Phase + " " + p.Reason
		}
		for _, id := range ids {
			if phases[id] != "Running " {
				return false, fmt.Sprintf("pods %v, want %v Running", phases, ids)
			}
		}
		return true, ""
	})
	return d
}

// running is what the engine says of one container.
type running struct {
	ID, StartedAt string
	Running       bool
	RestartCount  int
}

// engineView inspects every container of the instance, by name.
func engineView(t *testing.T, instance string) map[string]running {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cli := dockertest.Client(t)
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+instance))})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]running{}
	for _, c := range list {
		r, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(r.Name, "/")] = running{ID: r.ID, StartedAt: r.State.StartedAt, Running: r.State.Running, RestartCount: r.RestartCount}
	}
	return out
}

func sameView(t *testing.T, when string, want, got map[string]running) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: containers %v, want %v", when, got, want)
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: container %s is gone", when, name)
		case g != w:
			t.Errorf("%s: container %s is %+v, was %+v", when, name, g, w)
		}
	}
}

const webManifest = `
version: v1beta1
id: web
terminationGracePeriodSeconds: 2
containers:
  - name: a
    image: %[1]s
    env: [{name: LISTEN, value: ":8081"}, {name: MESSAGE, value: web-a}]
    ports: [{containerPort: 8081, hostPort: %[2]d, hostIP: 127.0.0.1}]
  - name: b
    image: %[1]s
    env: [{name: LISTEN, value: ":8082"}, {name: MESSAGE, value: web-b}]
`

const soloManifest = `
version: v1beta1
id: solo
terminationGracePeriodSeconds: 2
containers:
  - name: app
    image: %[1]s
    env: [{name: MESSAGE, value: solo}]
    ports: [{containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
`

// Must show 4: a hostlet killed with SIGKILL and started again adopts every
// container: same IDs, same start times, nothing restarted. SIGTERM stops
// hostlet and leaves the containers running.
func TestRestartAdoptsContainers(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	img := dockertest.TestImage(t)
	pWeb, pSolo := testkit.FreePort(t), testkit.FreePort(t)
	s.write(t, "web.yaml", fmt.Sprintf(webManifest, img, pWeb))
	s.write(t, "solo.yaml", fmt.Sprintf(soloManifest, img, pSolo))

	first := s.start(t, 1)
	first.waitRunning(time.Time{}, "web", "solo")
	checkPods := func() {
		t.Helper()
		testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pWeb), "", "MESSAGE=web-a")
		testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://localhost:8082/", pWeb), "", "MESSAGE=web-b")
		testkit.WaitHTTP(t, time.Minute, "GET", fmt.Sprintf("http://127.0.0.1:%d/", pSolo), "", "MESSAGE=solo")
	}
	checkPods()
	before := engineView(t, s.instance)
	if len(before) != 4 {
		t.Fatalf("containers %v, want web's a, b and infra, and solo's app", before)
	}
	for name, c := range before {
		if !c.Running || c.RestartCount != 0 {
			t.Fatalf("container %s: %+v", name, c)
		}
	}

	// kill -9: no chance to clean up. The containers run on.
	if err := first.stop(syscall.SIGKILL); err == nil {
		t.Errorf("hostlet killed with SIGKILL exited cleanly")
	}
	sameView(t, "after kill -9", before, engineView(t, s.instance))
	checkPods()

	restarted := time.Now()
	second := s.start(t, 2)
	second.waitRunning(restarted, "web", "solo")
	// A few more syncs: nothing changes in any of them.
	d := second.waitRunning(restarted.Add(3*time.Second), "web", "solo")
	if d.LastSync.Error != "" {
		t.Errorf("last sync error: %s", d.LastSync.Error)
	}
	for _, p := range d.Pods {
		for _, c := range p.Containers {
			if c.Restarts != 0 || c.State != hruntime.StateRunning {
				t.Errorf("pod %s container %s: %+v", p.ID, c.Name, c)
			}
		}
	}
	sameView(t, "after hostlet started again", before, engineView(t, s.instance))
	checkPods()

	// SIGTERM: hostlet exits 0 and the containers run on.
	if err := second.stop(syscall.SIGTERM); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Errorf("hostlet exited with %v after SIGTERM, want 0", ee)
		} else {
			t.Error(err)
		}
	}
	sameView(t, "after SIGTERM", before, engineView(t, s.instance))
	checkPods()
}

func dockerClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	if _, err := cli.Ping(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	return cli, nil
}
