// Package composetest builds the hostlet-compose helper for tests that
// read Compose projects.
package composetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/project"
)

// Helper builds cmd/hostlet-compose into a folder of t and returns its
// path (the build cache makes every build after the first a link).
func Helper(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("composetest: go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		t.Fatal("composetest: not inside a module")
	}
	out := filepath.Join(t.TempDir(), project.HelperName)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/hostlet-compose")
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("composetest: go build ./cmd/hostlet-compose: %v\n%s", err, b)
	}
	return out
}

// Renderer returns a renderer with a freshly built helper and host's
// settings.
func Renderer(t testing.TB, host project.Host) *project.Renderer {
	t.Helper()
	return project.NewRenderer(Helper(t), host)
}
