package compose_test

// Attacks on the Compose files volumes (relative binds, configs, secrets):
// outside review. Each test states the promise it checks; a failing test
// is a finding.

import (
	"context"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// byteFiles is a project folder in memory holding []byte (no copy per
// read, as a project.Bundle), counting what the translation reads.
type byteFiles struct {
	files map[string][]byte
	reads int
	bytes int
}

func (b *byteFiles) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("%s: invalid name", name)
	}
	d, ok := b.files[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	b.reads++
	b.bytes += len(d)
	return d, nil
}

func (b *byteFiles) Names() []string {
	var out []string
	for n := range b.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (b *byteFiles) Executable(string) bool { return false }

func loadAttack(t *testing.T, files compose.Files) ([]manifest.Sourced, []string) {
	t.Helper()
	pods, err := compose.Load(context.Background(), files, compose.Options{Source: "apps", Dir: "shop"})
	return pods, errorTexts(t, pods, err)
}

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

// A config or secret whose name or target makes its mount path "/" (or
// another folder every image needs, /run) passes translation and
// validation; Docker refuses a bind at "/" ("destination can't be '/'")
// only when the container is created, after the old one was taken down.
// Compose's schema allows a config named ".." ([a-zA-Z0-9._-]+).
func TestAttackFilesMountPathRoot(t *testing.T) {
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

// A mount below a read-only files folder at a path the folder does not
// hold cannot be made: runc creates the mount point inside the read-only
// bind and fails (EROFS) when the container starts, after the running one
// was taken down. The usual Compose pattern './app:/app' with a named
// volume for /app/node_modules (not in git) is exactly that; translation
// and validation accept it.
func TestAttackFilesNestedMountBelowReadOnlyFolder(t *testing.T) {
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

// The project bound (project.MaxBytes of mounted files, replicas counted)
// is checked only after every volume of a service was read and hashed:
// a few bytes of Compose per mount make the helper read and SHA-256 a
// whole 10 MiB file again, without bound but the 60 s timeout.
func TestAttackFilesHashAmplification(t *testing.T) {
	const mounts = 100 // 1000 bytes of Compose: 1 GiB hashed
	var vols []string
	for i := range mounts {
		vols = append(vols, fmt.Sprintf("'./big:/m%d'", i))
	}
	files := &byteFiles{files: map[string][]byte{
		"compose.yaml": []byte("services:\n  web: {image: busybox, volumes: [" + strings.Join(vols, ", ") + "]}\n"),
		"big":          make([]byte, manifest.MaxFileBytes),
	}}
	start := time.Now()
	_, errs := loadAttack(t, files)
	took := time.Since(start)
	if len(errs) == 0 {
		t.Fatal("no error for 1 GiB of mounted files")
	}
	if limit := project.MaxBytes + manifest.MaxFileBytes; files.bytes > limit {
		t.Errorf("the translation read (and hashed) %d MiB of files before refusing a project bounded at %d MiB (took %v)", files.bytes>>20, project.MaxBytes>>20, took)
	}
}

// The same for folders: each mount of a folder of 1000 files builds 1000
// items (and sorts every name of the project) before any bound applies,
// so a Compose file of tens of KiB makes the helper allocate without
// limit.
func TestAttackFilesFolderItemsAmplification(t *testing.T) {
	const folderFiles, mounts = manifest.MaxFileItems, 2000
	m := map[string][]byte{}
	for i := range folderFiles {
		m[fmt.Sprintf("d/f%04d", i)] = []byte("x")
	}
	var vols strings.Builder
	for i := range mounts {
		fmt.Fprintf(&vols, "      - ./d:/m%d\n", i)
	}
	m["compose.yaml"] = []byte("services:\n  web:\n    image: busybox\n    volumes:\n" + vols.String())
	files := &byteFiles{files: m}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, errs := loadAttack(t, files)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes of Compose: %d reads, %d MiB allocated, %v, %d errors", len(m["compose.yaml"]), files.reads, alloc>>20, took, len(errs))
	if files.reads > 10*project.MaxFiles {
		t.Errorf("%d file reads (%d MiB allocated, %v) for a project of %d files: no bound on the files volumes of a service", files.reads, alloc>>20, took, len(m))
	}
}

// A bind mount with an empty source is not a file of the project; it must
// not become the whole project folder (compose.yaml, .env and its
// variables) mounted into the container.
func TestAttackFilesEmptyBindSource(t *testing.T) {
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

// Two files volumes of one pod with different contents but the same
// Source: the io.hostlet.spec label keys its files by Source, so a change
// of one is reported as the other's, or not at all. A project file may be
// named like the Source of a content config ("config app").
func TestAttackFilesSourceNamesCollide(t *testing.T) {
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

// Once one service is over the project's byte bound, every later service
// that mounts any file at all is refused too, blamed for bytes that are
// not mounted (the first service's files were dropped).
func TestAttackFilesBoundBlamesLaterServices(t *testing.T) {
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

// A project delivered as one body (HTTP, etcd) reads no file of the host,
// whatever path it names: every files volume is refused. (Guard: passes.)
func TestAttackFilesBodyReadsNoHostFile(t *testing.T) {
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
