package agentrun_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

// buildDockerfile builds the demo server in two stages: final (the
// target) adds a build arg and a file of the context; a later stage that
// would fail (its file is not there) is never built.
const buildDockerfile = `FROM scratch AS base
COPY demo /demo
ENTRYPOINT ["/demo"]

FROM base AS final
ARG GREETING=unset
ENV MESSAGE=$GREETING
COPY msg.txt /msg.txt

FROM base AS never
COPY not-in-the-context /nope
`

// TestComposeBuild runs a Compose project with one service built from a
// folder of the project and one pulled by tag, on the real engine: the
// built image carries the build arg and the target's file; a sync with
// nothing changed builds nothing; a file excluded by .dockerignore
// changes nothing; a file of the context rebuilds and recreates that
// service alone, the reason naming the file; a Dockerfile whose build
// fails keeps the old container running, the pod Failed with
// BuildFailed and the build log's last lines.
func TestComposeBuild(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	port := testkit.FreePort(t)
	project := filepath.Join(tree, "app")
	named := "hostlet-test-built-" + e.instance + ":dev"
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    build:
      context: ./web
      target: final
      args: {GREETING: hello-from-arg}
    stop_grace_period: 1s
    ports: ["127.0.0.1:%d:8080"]
  api:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    command: ["pause"]
`, proj, named, port, e.image))
	web := filepath.Join(project, "web")
	demo, err := os.ReadFile(dockertest.DemoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(web, "demo"), string(demo))
	if err := os.Chmod(filepath.Join(web, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(web, "Dockerfile"), buildDockerfile)
	testkit.WriteFile(t, filepath.Join(web, "msg.txt"), "version one")
	testkit.WriteFile(t, filepath.Join(web, ".dockerignore"), "notes/\n*.md\n")
	testkit.WriteFile(t, filepath.Join(web, "notes", "todo.txt"), "not sent")
	testkit.WriteFile(t, filepath.Join(web, "README.md"), "not sent either")
	// The tree is read on its file events; the poll is the fallback. Each
	// read of the 7 MB context costs seconds of CPU under -race: a 1 s poll
	// kept two cores busy.
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 5s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	before := e.waitPods(t, 120*time.Second, proj+"-api", proj+"-web")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", url, "", "MESSAGE=hello-from-arg")
	testkit.WaitHTTP(t, 10*time.Second, "GET", url+"read?path=/msg.txt", "", "version one")
	if got := builds(t, a); got != 1 {
		t.Fatalf("builds after the first sync: %d, want 1", got)
	}
	image := before[1].Labels["io.hostlet.spec"]
	if !strings.Contains(image, "hostlet-build/"+proj+"-web-web:") {
		t.Errorf("web's spec label %s: image is not hostlet-build/%s-web-web:<digest>", image, proj)
	}
	if _, err := e.docker.ImageInspect(context.Background(), named); err != nil {
		t.Errorf("the built image is not tagged %s as the Compose file names it: %v", named, err)
	}

	// Nothing changed: a sync builds nothing and recreates nothing.
	waitSynced(t, a, time.Now())
	// A file .dockerignore excludes: the project's revision changes, the
	// build's inputs do not.
	testkit.WriteFile(t, filepath.Join(web, "notes", "todo.txt"), "changed, still not sent")
	testkit.WriteFile(t, filepath.Join(web, "README.md"), "changed too")
	seen := time.Now()
	waitRevision(t, a)
	waitSynced(t, a, seen.Add(1500*time.Millisecond))
	if got := builds(t, a); got != 1 {
		t.Errorf("builds after syncs with no build input changed: %d, want 1", got)
	}
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("containers changed with no build input changed:\nbefore %+v\nafter  %+v", before, after)
	}

	// A file of the context: web alone is rebuilt and recreated.
	testkit.WriteFile(t, filepath.Join(web, "msg.txt"), "version two")
	testkit.WaitHTTP(t, 120*time.Second, "GET", url+"read?path=/msg.txt", "", "version two")
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == proj+"-web" && p.LastAction != nil && strings.Contains(p.LastAction.Reason, "context file msg.txt changed") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pods %+v", d.Pods)
	})
	if got := builds(t, a); got != 2 {
		t.Errorf("builds after one context file changed: %d, want 2", got)
	}
	after := e.waitSettled(t, 60*time.Second, len(before)) // the recreate's old container gone
	if after[0].ID != before[0].ID {
		t.Errorf("api was recreated (%s -> %s) by a change to web's context", before[0].ID, after[0].ID)
	}
	if after[1].ID == before[1].ID {
		t.Error("web was not recreated")
	}

	// A Dockerfile that parses but does not build: the running web stays,
	// the pod says why with the log's last lines.
	testkit.WriteFile(t, filepath.Join(web, "Dockerfile"), strings.Replace(buildDockerfile, "COPY msg.txt /msg.txt", "COPY msg.txt /msg.txt\nCOPY missing.txt /missing.txt", 1))
	doc := a.WaitStatus(t, 120*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == proj+"-web" && p.Phase == "Failed" && p.Reason == "BuildFailed" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pods %+v", d.Pods)
	})
	for _, p := range doc.Pods {
		if p.ID == proj+"-web" {
			t.Logf("failed build: %s", p.Message)
			if !strings.Contains(p.Message, "missing.txt") || !strings.Contains(p.Message, "build log") {
				t.Errorf("message %q does not name the failing file with the build log", p.Message)
			}
		}
	}
	testkit.WaitHTTP(t, 10*time.Second, "GET", url+"read?path=/msg.txt", "", "version two")
	if now := e.containers(t); now[1].ID != after[1].ID || now[1].State != "running" {
		t.Errorf("web's running container changed after a failed build: %+v -> %+v", after[1], now[1])
	}
}

// builds is hostlet_build_duration_seconds_count of the agent's metrics.
func builds(t *testing.T, a *agenttest.Agent) int {
	t.Helper()
	code, body, err := testkit.HTTP("GET", a.URL("/metrics"), "")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hostlet_build_duration_seconds_count "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("metrics line %q: %v", sc.Text(), err)
			}
			return n
		}
	}
	return 0
}

// waitSynced waits until a sync that started after since has finished.
func waitSynced(t *testing.T, a *agenttest.Agent, since time.Time) {
	t.Helper()
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, since), fmt.Sprintf("last sync started %s", d.LastSync.Start)
	})
}

// waitRevision waits until the source local delivers a revision other
// than the one it holds now.
func waitRevision(t *testing.T, a *agenttest.Agent) {
	t.Helper()
	doc, err := a.Status()
	if err != nil {
		t.Fatal(err)
	}
	_, _, rev := sourceStatus(doc, "local")
	// A new revision of a project renders it again; with the race
	// detector, a 7 MB build context takes the helper's answer some 20 s
	// to copy on a quiet machine (as long as the first render, which
	// waitPods gives 120 s).
	a.WaitStatus(t, 120*time.Second, func(d api.Document) (bool, string) {
		_, errText, now := sourceStatus(d, "local")
		return now != rev && errText == "", fmt.Sprintf("revision %s (was %s) %s", now, rev, errText)
	})
}
