package agentrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// env is one hostlet under test: its own instance, state folder and port.
type env struct {
	instance string
	image    string
	stateDir string
	listen   string
	dir      string
	docker   *client.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{
		instance: dockertest.Instance(t),
		image:    dockertest.TestImage(t),
		stateDir: filepath.Join(t.TempDir(), "state"),
		listen:   fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		dir:      t.TempDir(),
		docker:   dockertest.Client(t),
	}
}

// config writes a config file (the common keys, then rest) and loads it as
// hostlet would.
func (e *env) config(t *testing.T, rest string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf(`hostname: test-host
instance: %s
stateDir: %s
listen: %s
docker:
  infraImage: %s
sync:
  interval: 1s
`, e.instance, e.stateDir, e.listen, e.image) + rest
	path := filepath.Join(t.TempDir(), "hostlet.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load:\n%s\n%v", yaml, err)
	}
	return cfg
}

// pod is a manifest running the test image as a pause process; label v
// tells versions apart.
func (e *env) pod(id, v string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\nlabels: {v: %q}\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    command: [/demo, pause]\n", id, v, e.image)
}

// podList is a YAML list of pods.
func (e *env) podList(v string, ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString("- " + strings.ReplaceAll(strings.TrimSuffix(e.pod(id, v), "\n"), "\n", "\n  ") + "\n")
	}
	return b.String()
}

// runAgent runs hostlet until ctx ends.
func runAgent(ctx context.Context, t *testing.T, cfg *config.Config) error {
	return agent.Run(ctx, cfg, agenttest.Options(nil), dockertest.Logger(t))
}

// start runs hostlet with cfg until the end of the test (or Stop).
func (e *env) start(t *testing.T, cfg *config.Config) *agenttest.Agent {
	t.Helper()
	return agenttest.Start(t, cfg, nil)
}

// box is one container of the instance as the engine reports it.
type box struct {
	ID, Pod, Source, State, StartedAt string
	Labels                            map[string]string
}

// containers lists the instance's containers, sorted by pod.
func (e *env) containers(t *testing.T) []box {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+e.instance))})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var out []box
	for _, c := range list {
		b := box{ID: c.ID, Pod: c.Labels[hruntime.LabelPod], Source: c.Labels[hruntime.LabelSource], State: c.State, Labels: c.Labels}
		if c.State == "running" {
			info, err := e.docker.ContainerInspect(ctx, c.ID)
			if cerrdefs.IsNotFound(err) {
				// Removed between the list and the inspect (hostlet is
				// pruning it): it is not there any more.
				continue
			}
			if err != nil {
				t.Fatalf("inspect %s: %v", c.ID, err)
			}
			b.StartedAt = info.State.StartedAt
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// runningPods returns the pods with a running container, sorted.
func runningPods(bs []box) []string {
	var out []string
	for _, b := range bs {
		if b.State == "running" {
			out = append(out, b.Pod)
		}
	}
	return out
}

// waitPods waits until exactly the given pods have running containers.
func (e *env) waitPods(t *testing.T, timeout time.Duration, want ...string) []box {
	t.Helper()
	sort.Strings(want)
	var bs []box
	testkit.WaitFor(t, timeout, func() (bool, string) {
		bs = e.containers(t)
		got := runningPods(bs)
		return strings.Join(got, ",") == strings.Join(want, ","), fmt.Sprintf("running pods %v, want %v", got, want)
	})
	return bs
}

// waitSettled waits until the instance has exactly n containers, all
// running (a recreate's old container removed), and returns them.
func (e *env) waitSettled(t *testing.T, timeout time.Duration, n int) []box {
	t.Helper()
	var bs []box
	testkit.WaitFor(t, timeout, func() (bool, string) {
		bs = e.containers(t)
		running := 0
		for _, b := range bs {
			if b.State == "running" {
				running++
			}
		}
		return len(bs) == n && running == n, fmt.Sprintf("%d containers, %d running, want %d running alone", len(bs), running, n)
	})
	return bs
}

// sourceStatus returns the status of source name.
func sourceStatus(doc api.Document, name string) (ok bool, errText, revision string) {
	for _, s := range doc.Sources {
		if s.Name == name {
			return true, s.Error, s.Revision
		}
	}
	return false, "", ""
}

// syncedSince reports whether a sync started after t finished.
func syncedSince(doc api.Document, t time.Time) bool {
	return doc.LastSync.Start.After(t)
}
