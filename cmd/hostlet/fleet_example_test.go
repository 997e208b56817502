package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// exampleFleet is the bundled fleet repository, relative to this package.
var exampleFleet = filepath.Join("..", "..", "examples", "fleet")

// buildHostlet builds this command as a static binary (as `make build`
// does) into a temp folder and returns its path.
func buildHostlet(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostlet")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestFleetExampleCI runs the fleet example's CI script, as a pull request
// would, on a copy of examples/fleet committed to a git repository (whose
// path has a space in it): a change passes (exit 0) and its plan is
// printed for every host, as does a new host; a rejected manifest, or one
// that does not even parse, fails it (exit 1).
func TestFleetExampleCI(t *testing.T) {
	hostlet := buildHostlet(t)
	dir := filepath.Join(t.TempDir(), "fleet repo")
	if err := os.CopyFS(dir, os.DirFS(exampleFleet)); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, dir)
	base := repo.commit("the fleet")
	repo.git("update-ref", "refs/remotes/origin/main", "HEAD")

	ci := func(t *testing.T) (int, string) {
		t.Helper()
		cmd := exec.Command("sh", filepath.Join(dir, "ci", "hostlet-ci.sh"))
		cmd.Env = append(os.Environ(), "HOSTLET="+hostlet, "REPO="+dir, "BASE=origin/main")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		mustNotContain(t, "the CI output", out.String(), "shop on web-1", "shop on web-3", "replace-me-from-your-secret-store", "shop v2")
		return code, out.String()
	}

	// The pull request: web-1's shop gets a new image and message.
	shop := filepath.Join(dir, "hosts", "web-1", "shop.yaml")
	writeFile(t, dir, "hosts/web-1/shop.yaml", strings.NewReplacer(
		"image: hostlet-demo:v1\n    env:\n      - {name: MESSAGE, value: \"shop on web-1\"}",
		"image: hostlet-demo:v2\n    env:\n      - {name: MESSAGE, value: \"shop v2\"}",
	).Replace(mustRead(t, shop)))
	change := repo.commit("shop v2 on web-1")
	vars := map[string]string{"@REPO@": dir, "@BASE7@": base[:7], "@CHANGE7@": change[:7]}

	code, out := ci(t)
	if code != 0 {
		t.Errorf("CI on a valid change: exit %d, want 0\n%s", code, out)
	}
	golden(t, "fleet/ci-change.txt", out, vars)

	// A new host: its config and folder. All its pods are new, common ones
	// included (at the base it had nothing to read).
	writeFile(t, dir, "hostlet/web-3.yaml", strings.ReplaceAll(mustRead(t, filepath.Join(dir, "hostlet", "web-2.yaml")), "web-2", "web-3"))
	writeFile(t, dir, "hosts/web-3/shop.yaml", strings.ReplaceAll(mustRead(t, filepath.Join(dir, "hosts", "web-2", "shop.yaml")), "web-2", "web-3"))
	vars["@HOST7@"] = repo.commit("web-3")[:7]
	code, out = ci(t)
	if code != 0 {
		t.Errorf("CI with a new host: exit %d, want 0\n%s", code, out)
	}
	golden(t, "fleet/ci-new-host.txt", out, vars)

	// A manifest that is rejected (a host port web-1's shop already binds).
	writeFile(t, dir, "hosts/web-1/api.yaml", `version: v1beta1
id: api
containers:
  - name: api
    image: hostlet-demo:v1
    ports:
      - {containerPort: 8080, hostPort: 8080}
`)
	code, out = ci(t)
	if code != 1 {
		t.Errorf("CI with a conflicting manifest: exit %d, want 1\n%s", code, out)
	}
	golden(t, "fleet/ci-rejected.txt", out, vars)

	// A file that is not even YAML.
	writeFile(t, dir, "hosts/web-1/api.yaml", "version: v1beta1\nid: api\ncontainers: [\n")
	code, out = ci(t)
	if code != 1 {
		t.Errorf("CI with a broken file: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "hosts/web-1/api.yaml") {
		t.Errorf("CI with a broken file does not name it:\n%s", out)
	}
}

// TestExamplesValidate: the bundled examples are valid, each host's
// configuration of the fleet read with --source (no network), and the
// quickstart's manifests.
func TestExamplesValidate(t *testing.T) {
	configs, err := filepath.Glob(filepath.Join(exampleFleet, "hostlet", "*.yaml"))
	if err != nil || len(configs) != 3 {
		t.Fatalf("examples/fleet/hostlet: %v, %d configs, want 3", err, len(configs))
	}
	for _, c := range configs {
		r := runCLI(t, "validate", "--config", c, "--source", "fleet="+exampleFleet)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "OK: 2 manifests in 1 sources, all valid.") {
			t.Errorf("validate --config %s: exit %d\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
	// The quickstart's Compose project needs the helper, which make build
	// puts beside hostlet; here it is built for the test.
	helper := composetest.Helper(t)
	t.Setenv("HOSTLET_COMPOSE_HELPER", helper)
	withHelper := writeFile(t, t.TempDir(), "hostlet.yaml", "compose: {helper: "+helper+"}\n")
	quick := filepath.Join("..", "..", "examples", "quickstart")
	for _, args := range [][]string{
		{"validate", "--config", withHelper, filepath.Join(quick, "manifests")},
		{"validate", "--config", filepath.Join(quick, "hostlet.yaml"), "--source", "local=" + filepath.Join(quick, "manifests")},
	} {
		r := runCLI(t, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "OK: 5 manifests in 1 sources, all valid.") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestFleetExampleWorkflow checks that the GitHub Actions workflow runs the
// CI script with what it needs: the whole history (for --against ref:), the
// base branch and the checkout.
func TestFleetExampleWorkflow(t *testing.T) {
	var wf struct {
		// YAML 1.1 reads the key "on" as the boolean true.
		On   map[string]any `json:"true"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `json:"uses"`
				With map[string]any    `json:"with"`
				Run  string            `json:"run"`
				Env  map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(exampleFleet, "ci", "github-actions.yml"))), &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull requests: %v", wf.On)
	}
	var fullHistory, runsScript bool
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["fetch-depth"] == float64(0) {
				fullHistory = true
			}
			if s.Run == "ci/hostlet-ci.sh" {
				runsScript = true
				if s.Env["BASE"] != "origin/${{ github.base_ref }}" || s.Env["REPO"] != "${{ github.workspace }}" {
					t.Errorf("the CI step's env is %v, want BASE=origin/<base branch> and REPO=the workspace", s.Env)
				}
			}
		}
	}
	if !fullHistory || !runsScript {
		t.Errorf("the workflow must check out the whole history (fetch-depth: 0): %v, and run ci/hostlet-ci.sh: %v", fullHistory, runsScript)
	}
	fi, err := os.Stat(filepath.Join(exampleFleet, "ci", "hostlet-ci.sh"))
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("ci/hostlet-ci.sh must be executable (the workflow runs it directly): %v %v", fi.Mode(), err)
	}
}
