package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// TestComposeNotesInValidateAndDiff: what a Compose translation did that
// its author may not expect (an environment name with no value anywhere,
// left out as Compose leaves it out) is said by validate and by diff on
// the pod it concerns, naming the entry and never a value; the pod is
// valid.
func TestComposeNotesInValidateAndDiff(t *testing.T) {
	root := t.TempDir()
	repo := newGitRepo(t, filepath.Join(root, "fleet"))
	repo.commit("initial commit: an empty repository")
	writeFile(t, repo.dir, "apps/shop/compose.yaml", "services:\n  web:\n    image: example.org/shop/web:1\n    environment: [DEBUG, MODE]\n")
	writeFile(t, repo.dir, "apps/shop/.env", "MODE=value-from-dotenv-7d1e\n")
	repo.commit("shop")
	cfg := writeFile(t, root, "hostlet.yaml", fmt.Sprintf(`hostname: h1
stateDir: %s/state
listen: ""
compose:
  helper: %s
sources:
  - name: fleet
    type: git
    url: file:///nonexistent/fleet.git
    ref: main
    paths: [apps]
`, root, composetest.Helper(t)))
	note := "fleet:apps/shop/compose.yaml: services.web.environment.DEBUG: not set in the project's .env or the host config's compose.env: left out of the container's environment, as Compose leaves it out"

	v := runCLI(t, "validate", "--config", cfg, "--source", "fleet="+repo.dir)
	if v.code != 0 || !strings.Contains(v.stdout, "note: "+note+"\n") {
		t.Errorf("validate: exit %d, want 0 and the note %q:\n%s%s", v.code, note, v.stdout, v.stderr)
	}
	d := runCLI(t, "diff", "--config", cfg, "--source", "fleet="+repo.dir, "--against", "ref:HEAD~1")
	if d.code != 2 || !strings.Contains(d.stdout, "+ pod shop-web") || !strings.Contains(d.stdout, "  note: "+note+"\n") {
		t.Errorf("diff: exit %d, want 2 and pod shop-web created with the note %q:\n%s%s", d.code, note, d.stdout, d.stderr)
	}
	j := runCLI(t, "diff", "--config", cfg, "--source", "fleet="+repo.dir, "--against", "ref:HEAD~1", "-o", "json")
	if !strings.Contains(j.stdout, `"notes": [`) {
		t.Errorf("diff -o json: no notes:\n%s", j.stdout)
	}
	for _, out := range []string{v.stdout, d.stdout, j.stdout} {
		if strings.Contains(out, "value-from-dotenv") {
			t.Errorf("an output shows an environment value:\n%s", out)
		}
	}
}
