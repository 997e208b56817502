package compose_test

// How a project's files are mounted (relative binds, configs, secrets):
// at a path a container can start with, under a name of their own, from
// the project only.

import (
	"context"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/validate"
)

// refusedSomewhere reports whether the translation or validation of the
// pods refuses something, and what.
func refusedSomewhere(t *testing.T, pods []manifest.Sourced, errs []string) []string {
	t.Helper()
	out := append([]string(nil), errs...)
	for _, p := range pods {
		if err := validate.Manifest(p, validate.Options{}); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// TestFilesMountAtRootRefused: a config or secret whose name or target
// makes its mount path "/" (or another folder every image needs, /run) is
// refused by translation or validation; Docker refuses a bind at "/"
// ("destination can't be '/'") only when the container is created, after
// the old one was taken down. Compose's schema allows a config named ".."
// ([a-zA-Z0-9._-]+).
func TestFilesMountAtRootRefused(t *testing.T) {
	tests := []struct {
		name, compose string
	}{
		{"config named ..", "services:\n  web: {image: busybox, configs: ['..']}\nconfigs:\n  '..': {content: x}\n"},
		{"config target /", "services:\n  web: {image: busybox, configs: [{source: app, target: /}]}\nconfigs:\n  app: {content: x}\n"},
		{"secret target ../..", "services:\n  web: {image: busybox, secrets: [{source: tok, target: ../..}]}\nsecrets:\n  tok: {environment: TOK}\n"},
		{"bind at /", "services:\n  web: {image: busybox, volumes: ['./a.conf:/']}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": tt.compose, "a.conf": "x", ".env": "TOK=t\n"}
			pods, errs := load(t, files, compose.Options{})
			if len(refusedSomewhere(t, pods, errs)) == 0 {
				for _, p := range pods {
					for _, vm := range p.Manifest.Containers[0].VolumeMounts {
						t.Logf("mount %s at %q", vm.Name, vm.MountPath)
					}
				}
				t.Error("a files volume mounted at / (path.Clean of the mount path) is accepted by translation and validation")
			}
		})
	}
}

// TestMountBelowReadOnlyFilesFolderRefused: a mount below a read-only
// files folder at a path the folder does not hold cannot be made: runc
// creates the mount point inside the read-only bind and fails (EROFS) when
// the container starts, after the running one was taken down. The usual
// Compose pattern './app:/app' with a named volume for /app/node_modules
// (not in git) is exactly that; translation or validation must refuse it.
func TestMountBelowReadOnlyFilesFolderRefused(t *testing.T) {
	tests := []struct {
		name, compose string
	}{
		{"named volume below a project folder", "services:\n  web:\n    image: node\n    volumes: ['./app:/app', 'nm:/app/node_modules']\nvolumes:\n  nm: {}\n"},
		{"config below a project folder", "services:\n  web:\n    image: nginx\n    volumes: ['./app:/app']\n    configs: [{source: extra, target: /app/extra.conf}]\nconfigs:\n  extra: {content: x}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": tt.compose, "app/index.js": "x"}
			pods, errs := load(t, files, compose.Options{})
			if len(refusedSomewhere(t, pods, errs)) == 0 {
				t.Error("a mount point below a read-only files folder, at a path the folder does not hold, is accepted: the container cannot start")
			}
		})
	}
}

// TestEmptyBindSourceMountsNoProjectFolder: a bind mount with an empty
// source is not a file of the project; it must not become the whole
// project folder (compose.yaml, .env and its variables) mounted into the
// container.
func TestEmptyBindSourceMountsNoProjectFolder(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web:\n    image: busybox\n    volumes: [{type: bind, source: '', target: /x}]\n",
		".env":         "DB_PASSWORD=hunter2\n",
	}
	pods, errs := load(t, files, compose.Options{})
	for _, p := range pods {
		for _, v := range p.Manifest.Volumes {
			if v.Files != nil && !v.Files.Single() {
				t.Errorf("an empty bind source mounts the folder %q (%d files, .env included); errors %q", v.Files.Source, len(v.Files.Items), errs)
			}
		}
	}
}

// TestFilesVolumesOfDifferentContentHaveDistinctSources: the
// io.hostlet.spec label keys a pod's files by Source, so two files volumes
// of one pod with different contents but the same Source would report a
// change of one as the other's, or not at all. A project file may be named
// like the Source of a content config ("config app").
func TestFilesVolumesOfDifferentContentHaveDistinctSources(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web:\n    image: busybox\n    volumes: ['./config app:/etc/a']\n    configs: [{source: app, target: /etc/b}]\nconfigs:\n  app: {content: other}\n",
		"config app":   "mine",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 || len(pods) != 1 {
		t.Fatalf("errors %q", errs)
	}
	bySource := map[string]string{}
	for _, v := range pods[0].Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		if d, ok := bySource[v.Files.Source]; ok && d != v.Files.Digest() {
			t.Errorf("two files volumes of different content are both named %q", v.Files.Source)
		}
		bySource[v.Files.Source] = v.Files.Digest()
	}
}

// TestFilesBoundBlamesOnlyTheServiceOverIt: once one service is over the
// project's byte bound, a later service that mounts a file of its own is
// not refused too, blamed for bytes that are not mounted (the first
// service's files were dropped).
func TestFilesBoundBlamesOnlyTheServiceOverIt(t *testing.T) {
	big := strings.Repeat("x", manifest.MaxFileBytes-1)
	files := mapFiles{
		"compose.yaml": "services:\n  a: {image: busybox, scale: 5, volumes: ['./big:/big']}\n  b: {image: busybox, configs: [tiny]}\nconfigs:\n  tiny: {content: x}\n",
		"big":          big,
	}
	pods, _ := load(t, files, compose.Options{})
	for _, p := range pods {
		if p.Manifest.ID == "shop-b" && len(p.Errors) > 0 {
			t.Errorf("service b (one byte of files) is refused: %v", p.Errors[0])
		}
	}
}

// TestBodyProjectMountsNoHostFile: a project delivered as one body (HTTP,
// etcd) reads no file of the host, whatever path it names: every files
// volume is refused. (A guard: it passed when it was written.)
func TestBodyProjectMountsNoHostFile(t *testing.T) {
	body := `
services:
  web:
    image: busybox
    volumes: ['./etc/passwd:/a', '../../../../etc/passwd:/b', '.:/c', '/etc/hostname:/d']
    configs: [c1, c2, c3]
    secrets: [s1, s2]
configs:
  c1: {file: /etc/passwd}
  c2: {file: ../../../../etc/passwd}
  c3: {file: ~/.bashrc}
secrets:
  s1: {file: /proc/self/environ}
  s2: {file: ./id_rsa}
`
	pods, err := compose.LoadBytes(context.Background(), []byte(body), compose.Options{Source: "edge"})
	errs := errorTexts(t, pods, err)
	for _, p := range pods {
		for _, v := range p.Manifest.Volumes {
			if v.Files != nil {
				t.Errorf("a body mounts files %q (%d bytes)", v.Files.Source, v.Files.Size())
			}
		}
	}
	if len(errs) < 8 {
		t.Errorf("errors %q: want one for each of 4 binds (the host path one under hostPathAllow), 3 configs and 2 secrets", errs)
	}
}
