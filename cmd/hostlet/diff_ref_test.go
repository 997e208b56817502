package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env values of web's MODE variable: they must appear in no output.
const (
	secretOld = "old-secret-value-1f3a"
	secretNew = "new-secret-value-9c2e"
)

// refFleet is a fleet repository, a local file source and two host
// configs (web-1, web-2) reading it, for diff --against ref:REV.
type refFleet struct {
	root    string
	repo    *gitRepo
	configs []string
	// vars turn temp paths and commit SHAs into stable placeholders for
	// the golden files.
	vars map[string]string
}

func newRefFleet(t *testing.T) *refFleet {
	t.Helper()
	// The git source's URL points here: CI reads the checkout, so nothing
	// may ever be fetched from it.
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("hostlet contacted the git source's URL: %s %s", r.Method, r.URL)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(trap.Close)

	root := t.TempDir()
	f := &refFleet{root: root, repo: newGitRepo(t, filepath.Join(root, "fleet")), vars: map[string]string{"@ROOT@": root, "@URL@": trap.URL}}
	// A second source, read the same on both sides of a ref diff.
	writeFile(t, root, "local/log-shipper.yaml", `version: v1beta1
id: log-shipper
containers:
  - name: shipper
    image: example.org/ops/shipper:3.1
`)
	for _, host := range []string{"web-1", "web-2"} {
		f.configs = append(f.configs, writeFile(t, root, "hostlet/"+host+".yaml", fmt.Sprintf(`hostname: %s
stateDir: %s/state-%s
listen: ""
sources:
  - name: fleet
    type: git
    url: %s/ops/fleet.git
    ref: main
    paths: [common, "hosts/{{.Hostname}}"]
  - name: local
    type: file
    path: %s/local
`, host, root, host, trap.URL, root)))
	}
	return f
}

// diff runs hostlet diff for both hosts against rev, in text and in JSON.
// It checks that both exit with want, that the JSON is well-formed and
// agrees with the text's exit code, and that no env value leaks.
func (f *refFleet) diff(t *testing.T, rev string, want int) (text, js string) {
	t.Helper()
	args := []string{"diff", "--config", f.configs[0], "--config", f.configs[1], "--source", "fleet=" + f.repo.dir, "--against", "ref:" + rev}
	tr := runCLI(t, args...)
	jr := runCLI(t, append(args, "-o", "json")...)
	for _, r := range []cliResult{tr, jr} {
		if r.code != want {
			t.Errorf("diff --against ref:%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", rev, r.code, want, r.stdout, r.stderr)
		}
		if r.stderr != "" {
			t.Errorf("diff --against ref:%s wrote to stderr:\n%s", rev, r.stderr)
		}
		mustNotContain(t, "diff output", r.stdout+r.stderr, secretOld, secretNew)
	}
	var rep diffReport
	if err := json.Unmarshal([]byte(jr.stdout), &rep); err != nil {
		t.Fatalf("diff -o json: %v\n%s", err, jr.stdout)
	}
	if len(rep.Hosts) != 2 || rep.Hosts[0].Host != "web-1" || rep.Hosts[1].Host != "web-2" {
		t.Errorf("diff -o json: hosts are not web-1, web-2 in order:\n%s", jr.stdout)
	}
	return tr.stdout, jr.stdout
}

func (f *refFleet) commit(t *testing.T, key, msg string) string {
	t.Helper()
	sha := f.repo.commit(msg)
	f.vars["@"+key+"@"] = sha
	f.vars["@"+key+"7@"] = sha[:7]
	return sha
}

const (
	nodeInfoYAML = `version: v1beta1
id: node-info
containers:
  - name: info
    image: example.org/ops/node-info:1.0
    ports:
      - {containerPort: 9100, hostPort: 9100, hostIP: 127.0.0.1}
`
	webYAML = `version: v1beta1
id: web
labels: {team: shop}
containers:
  - name: app
    image: example.org/shop/web:1.4.2
    env:
      - {name: MODE, value: "` + secretOld + `"}
      - {name: LISTEN, value: ":8080"}
    ports:
      - {containerPort: 8080, hostPort: 8080}
  - name: metrics
    image: example.org/shop/metrics:2.0
`
	oldAPIYAML = `version: v1beta1
id: old-api
containers:
  - name: api
    image: example.org/shop/api:0.9
`
	web2YAML = `version: v1beta1
id: web
containers:
  - name: app
    image: example.org/shop/web:1.4.2
    ports:
      - {containerPort: 8080, hostPort: 8080}
`
	// apiYAML binds port 9100 on every address: node-info (common, read
	// first) has 127.0.0.1:9100, so api loses.
	apiYAML = `version: v1beta1
id: api
containers:
  - name: api
    image: example.org/shop/api:1.0
    ports:
      - {containerPort: 9100, hostPort: 9100}
`
)

// TestDiffAgainstRef walks a fleet repository through a series of commits
// and checks, for two hosts at once, the exact text and JSON plan of each
// commit against the one before, and the exit codes: (a) pods added, (b)
// an image and an env value changed and a container added, (c) a pod
// removed and an invalid one added, (d) a running pod's manifest made
// invalid, and a rollback by git revert. No env value appears in any
// output, and the git source's URL is never contacted.
func TestDiffAgainstRef(t *testing.T) {
	f := newRefFleet(t)
	f.commit(t, "INIT", "initial commit: an empty repository")

	// (a) pods added: against the empty initial commit, everything is new.
	writeFile(t, f.repo.dir, "common/node-info.yaml", nodeInfoYAML)
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", webYAML)
	writeFile(t, f.repo.dir, "hosts/web-1/old-api.yaml", oldAPIYAML)
	writeFile(t, f.repo.dir, "hosts/web-2/web.yaml", web2YAML)
	f.commit(t, "A", "(a) add pods")
	text, js := f.diff(t, "HEAD~1", 2)
	golden(t, "diff/ref-a.txt", text, f.vars)
	golden(t, "diff/ref-a.json", js, f.vars)

	// (b) web-1's web: a new image and MODE value, and a new container.
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", strings.NewReplacer(
		"web:1.4.2", "web:1.5.0",
		secretOld, secretNew,
	).Replace(webYAML)+"  - name: cache\n    image: example.org/shop/cache:7.2\n")
	shaB := f.commit(t, "B", "(b) web 1.5.0, new MODE, cache sidecar")
	text, js = f.diff(t, "HEAD~1", 2)
	golden(t, "diff/ref-b.txt", text, f.vars)
	golden(t, "diff/ref-b.json", js, f.vars)

	// The same revision on both sides: no changes, exit 0.
	text, _ = f.diff(t, "HEAD", 0)
	golden(t, "diff/ref-b-same.txt", text, f.vars)
	// A revision given by its full SHA resolves the same way.
	if again, _ := f.diff(t, shaB, 0); again != text {
		t.Errorf("--against ref:<sha of HEAD> differs from ref:HEAD:\n%s\nvs\n%s", again, text)
	}

	// (c) old-api removed; api added, and rejected (host port taken).
	if err := os.Remove(filepath.Join(f.repo.dir, "hosts/web-1/old-api.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.repo.dir, "hosts/web-1/api.yaml", apiYAML)
	shaC := f.commit(t, "C", "(c) remove old-api, add api")
	text, js = f.diff(t, "HEAD~1", 1)
	golden(t, "diff/ref-c.txt", text, f.vars)
	golden(t, "diff/ref-c.json", js, f.vars)

	// (d) web's manifest gets a typo: it is rejected, and the version the
	// host runs stays (it is not removed).
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", strings.Replace(
		mustRead(t, filepath.Join(f.repo.dir, "hosts/web-1/web.yaml")), "hostPort: 8080", "hostport: 8080", 1))
	f.commit(t, "D", "(d) typo in web")
	text, js = f.diff(t, "HEAD~1", 1)
	golden(t, "diff/ref-d.txt", text, f.vars)
	golden(t, "diff/ref-d.json", js, f.vars)

	// Rollback: revert the typo and (b); against (c), the last good state,
	// the plan puts web back to 1.4.2 and removes cache.
	f.repo.git("revert", "--no-edit", "HEAD")
	f.repo.git("revert", "--no-edit", shaB)
	f.commit(t, "F", "empty commit after the reverts")
	text, _ = f.diff(t, shaC, 1) // api is still rejected
	golden(t, "diff/ref-rollback.txt", text, f.vars)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiffHidesEnvValues: the plan says that an env variable changed, was
// added or was removed, never its value, in text or JSON, for every host.
func TestDiffHidesEnvValues(t *testing.T) {
	f := newRefFleet(t)
	const added, removed = "value-of-added-var-5e1", "value-of-removed-var-c07"
	writeFile(t, f.repo.dir, "common/node-info.yaml", nodeInfoYAML)
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", strings.Replace(webYAML, `      - {name: LISTEN, value: ":8080"}`, `      - {name: OLD, value: "`+removed+`"}`, 1))
	writeFile(t, f.repo.dir, "hosts/web-2/web.yaml", web2YAML)
	f.commit(t, "A", "web with MODE and OLD")
	writeFile(t, f.repo.dir, "hosts/web-1/web.yaml", strings.NewReplacer(
		secretOld, secretNew,
		`      - {name: LISTEN, value: ":8080"}`, `      - {name: NEW, value: "`+added+`"}`,
	).Replace(webYAML))
	f.commit(t, "B", "MODE changed, OLD removed, NEW added")

	text, js := f.diff(t, "HEAD~1", 2) // checks MODE's values in both outputs
	for _, out := range []string{text, js} {
		mustNotContain(t, "diff output", out, secretOld, secretNew, added, removed)
		for _, want := range []string{"env MODE changed", "env NEW added", "env OLD removed"} {
			if !strings.Contains(out, want) {
				t.Errorf("diff output does not say %q:\n%s", want, out)
			}
		}
	}
}
