package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
)

// Env values of pair's MODE variable in the live test.
const (
	liveSecretOld = "live-secret-before-7d1e"
	liveSecretNew = "live-secret-after-42b0"
)

// TestDiffAgainstLiveAndStatus runs hostlet (agent.Run, in this process)
// on a file source until it has converged, then checks that
//   - diff --against live prints no changes and exits 0;
//   - with --source pointing at an edited copy of the folder it prints
//     exactly those edits (an image and an env value changed in a
//     two-container pod, a pod removed, a pod added) and exits 2;
//   - a manifest of a running pod made invalid is rejected and the pod
//     stays; a folder that reads as empty keeps its pods (exit 1);
//   - --against status gives the same text, and the same JSON plan, both
//     from the host's API and from the status the host reports to etcd;
//   - a pod pushed to the host (push source) stays as it runs;
//   - no env value appears in any output, nor in the status documents;
//   - diff changes nothing on the engine: the same containers, with the
//     same IDs and start times, before and after.
func TestDiffAgainstLiveAndStatus(t *testing.T) {
	instance := dockertest.Instance(t)
	image := dockertest.TestImage(t)
	docker := dockertest.Client(t)
	etcd := etcdtest.Start(t)
	const hostname = "diff-live"
	const etcdPrefix = "/hostlet-diff-test"

	manifests := t.TempDir()
	writeFile(t, manifests, "pair.yaml", pairYAML(image, image, liveSecretOld))
	writeFile(t, manifests, "solo.yaml", podYAML("solo", image))

	listen := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	cfgDir := t.TempDir()
	const token = "diff-test-token"
	tokenFile := writeFile(t, cfgDir, "token", token+"\n")
	// hostlet run refuses a token file other users can read.
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf(`hostname: %s
instance: %s
stateDir: %s
listen: %s
tokenFile: %s
docker:
  infraImage: %s
sync:
  interval: 1s
sources:
  - {name: local, type: file, path: %s}
  - {name: push, type: push}
`, hostname, instance, filepath.Join(t.TempDir(), "state"), listen, tokenFile, image, manifests)
	// The agent reports to etcd; diff --against status reads the API with
	// the first config and etcd with the second.
	apiConfig := writeFile(t, cfgDir, "api.yaml", base)
	etcdConfig := writeFile(t, cfgDir, "etcd.yaml", base+fmt.Sprintf("etcd:\n  endpoints: [%s]\n  prefix: %s\n", etcd.Endpoint, etcdPrefix))
	cfg, err := config.Load(etcdConfig)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Start(t, cfg, nil)
	// A pod only the running hostlet knows of: diff cannot read what was
	// pushed, and must leave it as it runs.
	pushManifest(t, "http://"+listen+"/manifests", token, podYAML("pushed", image))

	// Converged: both pods Running in the API's status and in etcd's, with
	// the same containers.
	var apiDoc api.Document
	testkit.WaitFor(t, 90*time.Second, func() (bool, string) {
		code, body, err := testkit.HTTP(http.MethodGet, "http://"+listen+"/status", "")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("GET /status: %d %v", code, err)
		}
		mustNotContain(t, "the status document (API)", body, liveSecretOld)
		apiDoc = api.Document{}
		if err := json.Unmarshal([]byte(body), &apiDoc); err != nil {
			return false, err.Error()
		}
		return converged(apiDoc, "pair", "pushed", "solo")
	})
	etcdCli := etcd.Client(t)
	statusKey, _, _ := reporter.Keys(etcdPrefix, hostname)
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := etcdCli.Get(ctx, statusKey)
		if err != nil {
			return false, fmt.Sprintf("etcd get %s: %v", statusKey, err)
		}
		if len(resp.Kvs) == 0 {
			return false, "no status in etcd at " + statusKey
		}
		mustNotContain(t, "the status document (etcd)", string(resp.Kvs[0].Value), liveSecretOld)
		var doc api.Document
		if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
			return false, err.Error()
		}
		if ok, msg := converged(doc, "pair", "pushed", "solo"); !ok {
			return false, "etcd: " + msg
		}
		if got, want := containerIDs(doc), containerIDs(apiDoc); got != want {
			return false, fmt.Sprintf("etcd has containers %s, the API %s", got, want)
		}
		return true, ""
	})
	before := engineState(t, docker, instance)
	if n := len(before); n != 5 {
		t.Fatalf("%d containers on the engine, want 5 (pair: infra, app, side; pushed: app; solo: app): %v", n, before)
	}

	modes := []struct{ name, config, against string }{
		{"live", apiConfig, "live"},
		{"status from the API", apiConfig, "status"},
		{"status from etcd", etcdConfig, "status"},
	}

	// Nothing changed: every mode prints the same no-change plan.
	for _, m := range modes {
		r := runCLI(t, "diff", "--config", m.config, "--against", m.against)
		if r.code != 0 || r.stdout != "Plan: 0 to create, 0 to recreate, 0 to remove, 4 unchanged, 0 rejected.\n" || r.stderr != "" {
			t.Errorf("diff --against %s (%s), nothing edited: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", m.against, m.name, r.code, r.stdout, r.stderr)
		}
	}

	// An edited copy of the folder, read with --source: pair's app gets a
	// new image and MODE value, solo goes, extra comes.
	edited := t.TempDir()
	repo, _, _ := strings.Cut(image, ":")
	writeFile(t, edited, "pair.yaml", pairYAML(repo+":v2", image, liveSecretNew))
	writeFile(t, edited, "extra.yaml", podYAML("extra", image))
	tree, err := sources.ReadTree(context.Background(), edited, []string{"."}, "local", nil)
	if err != nil {
		t.Fatal(err)
	}
	typo := t.TempDir()
	writeFile(t, typo, "pair.yaml", pairYAML(image, image, liveSecretOld))
	writeFile(t, typo, "solo.yaml", strings.Replace(podYAML("solo", image), "    image:", "    imag:", 1))
	wantText := strings.NewReplacer("REV", tree.Revision, "IMAGE", image).Replace(`+ pod extra (local @ REV)
  + app  create
pod pair (local @ REV)
  ~ app  recreate: image IMAGE -> v2; env MODE changed
- pod solo (local)
Plan: 1 to create, 1 to recreate, 1 to remove, 2 unchanged, 0 rejected.
`)
	for _, tc := range []struct {
		name string
		dir  string
		code int
		// text checks the text plan (the same from every mode).
		text func(string) bool
	}{
		{"edited", edited, 2, func(got string) bool { return got == wantText }},
		// solo's manifest gets a typo: it is rejected, and the running
		// version stays.
		{"rejected", typo, 1, func(got string) bool {
			lines := strings.Split(got, "\n")
			return len(lines) == 3 && strings.HasPrefix(lines[0], "local:solo.yaml: rejected solo: containers[0].imag: ") &&
				strings.HasSuffix(lines[0], " (the running version stays)") &&
				lines[1] == "Plan: 0 to create, 0 to recreate, 0 to remove, 4 unchanged, 1 rejected." && lines[2] == ""
		}},
		// The folder reads as empty: the host keeps the source's last good
		// set rather than removing every pod.
		{"empty", t.TempDir(), 1, func(got string) bool {
			return got == "error: source local: source now holds no manifests, but held 2; keeping its last good set (set sync.allowEmpty: true to allow this)\n"+
				"Plan: 0 to create, 0 to recreate, 0 to remove, 4 unchanged, 0 rejected.\n"
		}},
	} {
		var texts, plans []string
		for _, m := range modes {
			args := []string{"diff", "--config", m.config, "--against", m.against, "--source", "local=" + tc.dir}
			r := runCLI(t, args...)
			if r.code != tc.code || !tc.text(r.stdout) || r.stderr != "" {
				t.Errorf("%s: diff --against %s (%s): exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.name, m.against, m.name, r.code, tc.code, r.stdout, r.stderr)
			}
			texts = append(texts, r.stdout)
			mustNotContain(t, "diff output", r.stdout+r.stderr, liveSecretOld, liveSecretNew)
			j := runCLI(t, append(args, "-o", "json")...)
			if j.code != tc.code {
				t.Errorf("%s: diff --against %s (%s) -o json: exit %d, want %d\n%s%s", tc.name, m.against, m.name, j.code, tc.code, j.stdout, j.stderr)
			}
			mustNotContain(t, "diff -o json output", j.stdout+j.stderr, liveSecretOld, liveSecretNew)
			var rep diffReport
			if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || len(rep.Hosts) != 1 {
				t.Fatalf("%s: diff -o json: %v\n%s", tc.name, err, j.stdout)
			}
			h := rep.Hosts[0]
			if h.Host != hostname || h.Against != m.against || !h.Planned {
				t.Errorf("%s: diff -o json (%s): host %q against %q planned %v", tc.name, m.name, h.Host, h.Against, h.Planned)
			}
			h.Against, h.Config = "", ""
			b, _ := json.Marshal(h)
			plans = append(plans, string(b))
		}
		for i := 1; i < len(modes); i++ {
			if texts[i] != texts[0] {
				t.Errorf("%s: the text plan against %s differs from the one against %s:\n%s\nvs\n%s", tc.name, modes[i].name, modes[0].name, texts[i], texts[0])
			}
			if plans[i] != plans[0] {
				t.Errorf("%s: the JSON plan against %s differs from the one against %s:\n%s\nvs\n%s", tc.name, modes[i].name, modes[0].name, plans[i], plans[0])
			}
		}
	}

	// diff changed nothing on the engine.
	after := engineState(t, docker, instance)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the engine changed while diff ran:\nbefore %v\nafter  %v", before, after)
	}
}

// pushManifest POSTs a manifest to the push source.
func pushManifest(t *testing.T, url, token, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s\n%s", url, resp.Status, b)
	}
}

// pairYAML is a two-container pod (so it has an infra container): app runs
// appImage with MODE=mode, side runs sideImage.
func pairYAML(appImage, sideImage, mode string) string {
	return fmt.Sprintf(`version: v1beta1
id: pair
terminationGracePeriodSeconds: 1
containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: [/demo, pause]
    env:
      - {name: MODE, value: %q}
  - name: side
    image: %s
    imagePullPolicy: Never
    command: [/demo, pause]
`, appImage, mode, sideImage)
}

// podYAML is a one-container pod running the test image's pause process.
func podYAML(id, image string) string {
	return dockertest.PausePod(id, image, "")
}

// converged reports whether doc shows exactly the given pods, each Running
// with every container running, after a sync without error.
func converged(doc api.Document, ids ...string) (bool, string) {
	if doc.LastSync.Error != "" {
		return false, "last sync failed: " + doc.LastSync.Error
	}
	if len(doc.Pods) != len(ids) {
		return false, fmt.Sprintf("%d pods, want %d", len(doc.Pods), len(ids))
	}
	for i, p := range doc.Pods {
		if p.ID != ids[i] || p.Phase != "Running" {
			return false, fmt.Sprintf("pod %s is %s", p.ID, p.Phase)
		}
		for _, c := range p.Containers {
			if c.State != hruntime.StateRunning || c.ContainerID == "" {
				return false, fmt.Sprintf("pod %s container %s is %q", p.ID, c.Name, c.State)
			}
		}
	}
	return true, ""
}

func containerIDs(doc api.Document) string {
	var ids []string
	for _, p := range doc.Pods {
		for _, c := range p.Containers {
			ids = append(ids, p.ID+"/"+c.Name+"="+c.ContainerID)
		}
	}
	return strings.Join(ids, " ")
}

// engineState lists the instance's containers as "name id startedAt
// state", sorted by name, straight from the engine.
func engineState(t *testing.T, docker *client.Client, instance string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+instance))})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list {
		ins, err := docker.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", strings.TrimPrefix(ins.Name, "/"), ins.ID, ins.State.StartedAt, ins.State.Status))
	}
	slices.Sort(out)
	return out
}
