package gitrun_test

// End-to-end tests: hostlet (internal/agent.Run, in this process) with a git
// source on a repository served by the test, against the real Docker engine.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// e2e is one hostlet under test with a git source named fleet.
type e2e struct {
	t        *testing.T
	repo     *gittest.Repo
	srv      *gittest.Server // nil over file://
	instance string
	image    string
	stateDir string
	dir      string
	pwFile   string
	token    string
	docker   *client.Client
	logs     *testkit.LogBuffer

	agent *agenttest.Agent // set by start
}

// e2eTimeout bounds every wait: the engine may be busy with other tests.
const e2eTimeout = 2 * time.Minute

func newE2E(t *testing.T, overHTTP bool) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: needs the Docker engine (not run with -short)")
	}
	e := &e2e{
		t: t, repo: gittest.NewRepo(t), instance: dockertest.Instance(t), image: dockertest.TestImage(t),
		stateDir: filepath.Join(t.TempDir(), "state"), dir: t.TempDir(), token: "e2e-token-4711",
		docker: dockertest.Client(t),
	}
	// hostlet run refuses a token or password file other users can read.
	writePrivate(t, filepath.Join(e.dir, "token"), e.token+"\n")
	if overHTTP {
		e.srv = gittest.Serve(t, e.repo.Root, httpUser, httpPassword)
		e.pwFile = filepath.Join(e.dir, "password")
		writePrivate(t, e.pwFile, httpPassword+"\n")
	}
	return e
}

// writePrivate writes a credential file only its owner can read.
func writePrivate(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// config writes hostlet's config file and loads it as `hostlet run` does.
// The git source polls every sourceInterval.
func (e *e2e) config(sourceInterval string) *config.Config {
	e.t.Helper()
	url, auth := e.repo.FileURL(), ""
	if e.srv != nil {
		url = e.srv.RepoURL(e.repo)
		auth = fmt.Sprintf("    auth: {username: %s, passwordFile: %s}\n", httpUser, e.pwFile)
	}
	yaml := fmt.Sprintf(`hostname: e2e-host
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
tokenFile: %s
docker:
  infraImage: %s
sync:
  interval: 1s
sources:
  - name: fleet
    type: git
    url: %s
    ref: main
    path: manifests
    interval: %s
`, e.instance, e.stateDir, testkit.FreePort(e.t), filepath.Join(e.dir, "token"), e.image, url, sourceInterval) + auth
	path := filepath.Join(e.dir, "hostlet.yaml")
	testkit.WriteFile(e.t, path, yaml)
	cfg, err := config.Load(path)
	if err != nil {
		e.t.Fatalf("config.Load:\n%s\n%v", yaml, err)
	}
	return cfg
}

// start runs hostlet with cfg until stop (or the end of the test).
func (e *e2e) start(cfg *config.Config) {
	e.t.Helper()
	var buf *testkit.LogBuffer
	log, buf := testkit.Logger(e.t)
	if e.logs == nil {
		e.logs = buf
	} else {
		log = slog.New(slog.NewTextHandler(io.MultiWriter(e.t.Output(), e.logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e.agent = agenttest.Start(e.t, cfg, log)
}

// stop ends hostlet and waits for Run to return; containers keep running.
func (e *e2e) stop() {
	if e.agent != nil {
		e.agent.Stop()
	}
}

// pod is a manifest running the test image as a pause process; label v
// (and so the spec hash) tells versions apart.
func (e *e2e) pod(id, v string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\nlabels: {v: %q}\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    command: [/demo, pause]\n    env: [{name: MESSAGE, value: %q}]\n", id, v, e.image, v)
}

// live is one pod's app container as the engine reports it.
type live struct {
	ID, State, Revision, V, Source string
}

// containers lists the instance's app containers by pod (infra containers
// are not listed; these pods have none).
func (e *e2e) containers() map[string]live {
	e.t.Helper()
	out, dup := e.listContainers()
	if dup != "" {
		e.t.Fatal(dup)
	}
	return out
}

// listContainers is containers, and what is wrong when a pod has two
// app containers (a recreate's old one, stopped, is removed only after
// its successor starts: waitContainers waits that out).
func (e *e2e) listContainers() (map[string]live, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+e.instance))})
	if err != nil {
		e.t.Fatalf("list containers: %v", err)
	}
	out := map[string]live{}
	for _, c := range list {
		pod := c.Labels[hruntime.LabelPod]
		if c.Labels[hruntime.LabelContainer] == "POD" {
			out[pod+"/POD"] = live{ID: c.ID, State: c.State}
			continue
		}
		if prev, dup := out[pod]; dup {
			return out, fmt.Sprintf("pod %s has two app containers: %s (%s) and %s (%s)", pod, prev.ID, prev.State, c.ID, c.State)
		}
		out[pod] = live{ID: c.ID, State: c.State, Revision: c.Labels[hruntime.LabelRevision], V: c.Labels["v"], Source: c.Labels[hruntime.LabelSource]}
	}
	return out, ""
}

// want is what a pod must look like: version v, created at revision rev.
type want struct{ v, rev string }

// waitContainers waits until exactly the pods in w run, each at its version
// and revision label, and returns them.
func (e *e2e) waitContainers(w map[string]want) map[string]live {
	e.t.Helper()
	var got map[string]live
	testkit.WaitFor(e.t, e2eTimeout, func() (bool, string) {
		var dup string
		if got, dup = e.listContainers(); dup != "" {
			return false, dup
		}
		if msg := matchContainers(got, w); msg != "" {
			return false, msg
		}
		return true, ""
	})
	return got
}

func matchContainers(got map[string]live, w map[string]want) string {
	var ids []string
	for id := range got {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(got) != len(w) {
		return fmt.Sprintf("containers of pods %v, want pods %v", ids, keys(w))
	}
	for id, x := range w {
		c, ok := got[id]
		switch {
		case !ok:
			return fmt.Sprintf("pod %s has no container (have %v)", id, ids)
		case c.State != "running":
			return fmt.Sprintf("pod %s: container %s", id, c.State)
		case c.V != x.v || c.Revision != x.rev || c.Source != "fleet":
			return fmt.Sprintf("pod %s: v=%s revision=%s source=%s, want v=%s revision=%s source=fleet", id, c.V, c.Revision, c.Source, x.v, x.rev)
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (e *e2e) status() (api.Document, error) { return e.agent.Status() }

// waitStatus waits until /status shows the source at rev with an error
// containing errPart ("" for none) and exactly the pods given, each Running
// at rev; it returns the document.
func (e *e2e) waitStatus(rev, errPart string, pods ...string) api.Document {
	e.t.Helper()
	var doc api.Document
	testkit.WaitFor(e.t, e2eTimeout, func() (bool, string) {
		d, err := e.status()
		if err != nil {
			return false, err.Error()
		}
		doc = d
		if len(d.Sources) != 1 || d.Sources[0].Name != "fleet" || d.Sources[0].Type != config.TypeGit {
			return false, fmt.Sprintf("sources %+v", d.Sources)
		}
		s := d.Sources[0]
		if s.Revision != rev {
			return false, fmt.Sprintf("source revision %s, want %s (error %q)", s.Revision, rev, s.Error)
		}
		if errPart == "" && s.Error != "" || errPart != "" && !strings.Contains(s.Error, errPart) {
			return false, fmt.Sprintf("source error %q, want %q", s.Error, errPart)
		}
		var got []string
		for _, p := range d.Pods {
			got = append(got, p.ID)
			if p.Revision != rev || p.Source != "fleet" || p.Phase != "Running" {
				return false, fmt.Sprintf("pod %s: source %s revision %s phase %s, want fleet %s Running", p.ID, p.Source, p.Revision, p.Phase, rev)
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(pods, ",") {
			return false, fmt.Sprintf("status pods %v, want %v", got, pods)
		}
		return true, ""
	})
	return doc
}

// postSync asks hostlet to fetch every source now (POST /sync, the webhook).
func (e *e2e) postSync() {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.agent.URL("/sync"), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST /sync: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		e.t.Fatalf("POST /sync: %d", resp.StatusCode)
	}
}

// waitSyncs waits until n syncs have started after now: what hostlet does
// on its own in that time has been done.
func (e *e2e) waitSyncs(n int) {
	e.t.Helper()
	since := time.Now()
	seen := map[time.Time]bool{}
	testkit.WaitFor(e.t, e2eTimeout, func() (bool, string) {
		d, err := e.status()
		if err != nil {
			return false, err.Error()
		}
		if d.LastSync.Start.After(since) {
			seen[d.LastSync.Start] = true
		}
		return len(seen) >= n, fmt.Sprintf("%d of %d syncs seen", len(seen), n)
	})
}

// waitEvent waits until /events holds an event of type typ about source
// fleet whose message contains msg.
func (e *e2e) waitEvent(typ, msg string) {
	e.t.Helper()
	testkit.WaitFor(e.t, e2eTimeout, func() (bool, string) {
		code, body, err := testkit.HTTP(http.MethodGet, e.agent.URL("/events"), "")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("GET /events: %d %v", code, err)
		}
		var list []struct{ Type, Pod, Reason, Message string }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			return false, err.Error()
		}
		for _, ev := range list {
			if ev.Type == typ && strings.Contains(ev.Message, msg) && strings.Contains(ev.Reason+" "+ev.Message, "fleet") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event with %q about fleet in %s", typ, msg, body)
	})
}

// sameContainers fails unless the pods' containers are the very ones of
// before (nothing was recreated, restarted or removed).
func (e *e2e) sameContainers(before map[string]live) {
	e.t.Helper()
	now := e.containers()
	if len(now) != len(before) {
		e.t.Fatalf("containers changed: %v -> %v", keys(before), keys(now))
	}
	for id, b := range before {
		n := now[id]
		if n.ID != b.ID || n.State != "running" {
			e.t.Fatalf("pod %s: container %s (%s) -> %s (%s)", id, b.ID, b.State, n.ID, n.State)
		}
	}
}

// TestGitE2ECommitReachesContainers: over file:// and over smart HTTP with
// basic auth (auth.username + auth.passwordFile), a commit that edits, adds
// and deletes manifests reaches the containers on the engine after POST
// /sync (the source's own interval is an hour); the new and recreated
// containers carry the new SHA in io.hostlet.revision and /status shows it
// for the source and every pod.
func TestGitE2ECommitReachesContainers(t *testing.T) {
	t.Parallel()
	for _, overHTTP := range []bool{false, true} {
		name := map[bool]string{false: "file", true: "http"}[overHTTP]
		t.Run(name, func(t *testing.T) {
			e := newE2E(t, overHTTP)
			c1 := e.repo.Change("first", map[string]string{
				"manifests/a.yaml": e.pod("a", "1"),
				"manifests/b.yaml": e.pod("b", "1"),
				"manifests/c.yaml": e.pod("c", "1"),
			})
			e.start(e.config("1h"))
			before := e.waitContainers(map[string]want{"a": {"1", c1}, "b": {"1", c1}, "c": {"1", c1}})
			e.waitStatus(c1, "", "a", "b", "c")

			c2 := e.repo.Change("edit a, delete b, add d", map[string]string{
				"manifests/a.yaml":     e.pod("a", "2"),
				"manifests/new/d.yaml": e.pod("d", "1"),
			}, "manifests/b.yaml")
			// Nothing polls the repository on its own within the hour.
			if e.srv != nil {
				e.srv.ResetCounts()
			}
			e.waitSyncs(2)
			if d, err := e.status(); err != nil || d.Sources[0].Revision != c1 {
				t.Fatalf("source moved to %+v (%v) before POST /sync", d.Sources, err)
			}
			if e.srv != nil {
				if c := e.srv.Counts(); c != (gittest.Counts{}) {
					t.Fatalf("the server saw %+v before POST /sync", c)
				}
			}

			e.postSync()
			after := e.waitContainers(map[string]want{"a": {"2", c2}, "c": {"1", c1}, "d": {"1", c2}})
			doc := e.waitStatus(c2, "", "a", "c", "d")
			if after["c"].ID != before["c"].ID {
				t.Errorf("pod c, unchanged in the commit, was recreated (%s -> %s)", before["c"].ID, after["c"].ID)
			}
			if after["a"].ID == before["a"].ID {
				t.Error("pod a, edited in the commit, kept its container")
			}
			if doc.Sources[0].Manifests != 3 || doc.Sources[0].LastSuccess.IsZero() {
				t.Errorf("source status %+v, want 3 manifests and a last success", doc.Sources[0])
			}
			if e.srv != nil {
				if c := e.srv.Counts(); c.InfoRefs < 1 || c.UploadPack < 1 {
					t.Errorf("the server saw %+v after POST /sync, want a fetch", c)
				}
			}
		})
	}
}

// TestGitE2EWrongPasswordServerDownAndRestart: a wrong password in
// passwordFile and a server that is down are source errors in /status;
// the pods of the last good commit keep running (nothing is pruned though
// the new commit deletes pods); fixed, the commit applies. A hostlet
// restarted while the server is down runs from its persisted set and
// recreates nothing.
func TestGitE2EWrongPasswordServerDownAndRestart(t *testing.T) {
	t.Parallel()
	e := newE2E(t, true)
	c1 := e.repo.Change("first", map[string]string{
		"manifests/a.yaml": e.pod("a", "1"),
		"manifests/b.yaml": e.pod("b", "1"),
	})
	e.start(e.config("1h"))
	good := e.waitContainers(map[string]want{"a": {"1", c1}, "b": {"1", c1}})
	e.waitStatus(c1, "", "a", "b")

	// The password file now holds a wrong password; a commit deletes b.
	testkit.WriteFile(t, e.pwFile, "wrong-password-31337\n")
	c2 := e.repo.Change("delete b", nil, "manifests/b.yaml")
	e.postSync()
	e.waitStatus(c1, "authentication failed", "a", "b")
	e.waitEvent("source-error", "authentication failed")
	e.waitSyncs(2)
	e.sameContainers(good)

	// Fixed: the commit applies, b goes.
	testkit.WriteFile(t, e.pwFile, httpPassword+"\n")
	e.postSync()
	good = e.waitContainers(map[string]want{"a": {"1", c1}})
	e.waitStatus(c2, "", "a")

	// The server goes down; a commit adds c.
	e.srv.Stop()
	c3 := e.repo.Change("add c", map[string]string{"manifests/c.yaml": e.pod("c", "1")})
	e.postSync()
	e.waitStatus(c2, "not reachable", "a")
	e.waitEvent("source-error", "not reachable")
	e.waitSyncs(2)
	e.sameContainers(good)

	// A restart while the server is down: the persisted set runs, adopted.
	e.stop()
	e.start(e.config("1h"))
	e.waitStatus(c2, "not reachable", "a")
	e.waitSyncs(2)
	e.sameContainers(good)

	// Back up: the commit applies.
	e.srv.Start()
	e.postSync()
	e.waitContainers(map[string]want{"a": {"1", c1}, "c": {"1", c3}})
	e.waitStatus(c3, "", "a", "c")

	for _, secret := range []string{httpPassword, "wrong-password-31337"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("password %q found in hostlet's logs", secret)
		}
	}
	b, err := os.ReadFile(filepath.Join(e.stateDir, "sources", "fleet.json"))
	if err != nil {
		t.Fatalf("persisted set: %v", err)
	}
	if strings.Contains(string(b), httpPassword) {
		t.Error("the password is in the persisted state")
	}
}

// TestGitE2EPolling: with no webhook, the source's own interval (1s) brings
// a new commit to the engine.
func TestGitE2EPolling(t *testing.T) {
	t.Parallel()
	e := newE2E(t, false)
	c1 := e.repo.Change("first", map[string]string{"manifests/a.yaml": e.pod("a", "1")})
	e.start(e.config("1s"))
	e.waitContainers(map[string]want{"a": {"1", c1}})
	e.waitStatus(c1, "", "a")

	c2 := e.repo.Change("second", map[string]string{"manifests/a.yaml": e.pod("a", "2"), "manifests/b.yaml": e.pod("b", "1")})
	e.waitContainers(map[string]want{"a": {"2", c2}, "b": {"1", c2}})
	e.waitStatus(c2, "", "a", "b")
}
