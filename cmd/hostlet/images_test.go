package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostlet images runs the hostlet-images helper with its arguments, its
// output and its exit status; without the helper it says where it looked.
func TestImagesRunsItsHelper(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(bin, imagesHelper), "../hostlet-images")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hostlet-images: %v\n%s", err, out)
	}
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", "version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: \"127.0.0.1:1/shop/web:1.4.2\", imagePolicy: {semver: \"~1.4\"}}\n")

	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := runCLI(t, "images", "check", "--source", "apps="+dir, "--max-tags", "10")
	if r.code != 1 || !strings.Contains(r.stdout, "web/app 127.0.0.1:1/shop/web: error") {
		t.Errorf("images check with an unreachable registry: exit %d\nstdout %s\nstderr %s\nwant exit 1 and the image's error", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "images", "check", "--no-such-flag"); r.code != 1 || !strings.Contains(r.stderr, "unknown flag: --no-such-flag") {
		t.Errorf("images with an unknown flag: exit %d, stderr %q", r.code, r.stderr)
	}

	t.Setenv("PATH", t.TempDir())
	if r := runCLI(t, "images", "check", "--source", "apps="+dir); r.code != 1 || !strings.Contains(r.stderr, "hostlet-images not found") {
		t.Errorf("images without the helper: exit %d, stderr %q", r.code, r.stderr)
	}
}
