package compose_test

// Attacks on extends.file (outside review of bundleFiles/rebaseExtends).
// Each test states the promise it checks; a failing test is a finding.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/compose"
)

// extendsBase is a project whose compose.yaml extends service base of
// base.yaml (at the project's root).
func extendsBase(base string) mapFiles {
	return mapFiles{
		"compose.yaml": "services:\n  web:\n    extends: {file: base.yaml, service: base}\n",
		"base.yaml":    base,
	}
}

// Promise: nothing outside the project is touched, and errors show no
// memory file or helper internals. compose-go resolves the paths of an
// extended file (loadExtendsBase -> paths.ResolveRelativePaths, run even
// with ResolvePaths false), and services.*.develop.watch.*.path goes
// through utils.ResolveSymbolicLink: os.Lstat on every component of a
// host path of the attacker's choosing and filepath.EvalSymlinks on the
// first link, whose error is shown. That is an oracle on the host's
// links (a dangling link's target), the helper's pid and its fd table
// (pipe inodes, "memfd:hostlet-compose"), before hostlet ever refuses
// develop.
func TestAttackExtendsWatchPathProbesHost(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target-of-a-host-link")
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	probes := []string{filepath.Join(dir, "link", "x"), "/dev/stdin/x", "/dev/stdout/x"}
	for fd := 0; fd < 40; fd++ {
		probes = append(probes, fmt.Sprintf("/proc/%d/fd/%d/x", os.Getpid(), fd))
	}
	leaked := map[string]bool{}
	for _, p := range probes {
		_, errs := load(t, extendsBase("services:\n  base:\n    image: busybox\n    develop: {watch: [{path: '"+p+"', action: sync, target: /app}]}\n"), compose.Options{})
		for _, e := range errs {
			if !strings.Contains(e, "develop: not supported") {
				leaked[e] = true
			}
		}
	}
	for e := range leaked {
		t.Errorf("a develop.watch path of an extended file touched the host: %s", e)
	}
}

// Promise: one Compose file holds at most MaxDocuments YAML documents
// (compose-go merges the whole model once per document). rebaseExtends
// counts documents only for a file in a sub-folder: an extended file at
// the project's root is handed over as it is, with any number of them
// (2000 tiny documents, 67 KB, take compose-go ~30 s; the cost is
// quadratic, and 64 references multiply it).
func TestAttackExtendsDocumentsBoundAtRoot(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3*compose.MaxDocuments; i++ {
		fmt.Fprintf(&b, "---\nservices: {s%d: {image: busybox}}\n", i)
	}
	for _, name := range []string{"base.yaml", "sub/base.yaml"} {
		t.Run(name, func(t *testing.T) {
			files := mapFiles{
				"compose.yaml": "services:\n  web:\n    extends: {file: " + name + ", service: s0}\n",
				name:           b.String(),
			}
			_, errs := load(t, files, compose.Options{})
			if !strings.Contains(strings.Join(errs, "\n"), fmt.Sprintf("more than %d YAML documents", compose.MaxDocuments)) {
				t.Errorf("%s with %d documents extended; errors %q, want the documents' bound", name, 3*compose.MaxDocuments, errs)
			}
		})
	}
}

// Promise: MaxReferencedFiles bounds the files one load reads. Every
// reference gets a fresh memfd, so the same file counts (and is read,
// copied, parsed, interpolated) once per service extending it, and
// compose-go's extends cache (keyed by the path the loader returns)
// never hits: 65 services extending one common file are refused, and a
// 302-byte file extended by 64 services costs 64 parses (measured: 6.9 GB
// allocated, 8.7 s, against 114 MB for one).
func TestAttackExtendsOneFileCountedPerReference(t *testing.T) {
	var c strings.Builder
	c.WriteString("services:\n")
	for i := 0; i <= compose.MaxReferencedFiles; i++ {
		fmt.Fprintf(&c, "  s%d: {extends: {file: common.yaml, service: base}}\n", i)
	}
	files := mapFiles{"compose.yaml": c.String(), "common.yaml": "services:\n  base: {image: busybox}\n"}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 || len(pods) != compose.MaxReferencedFiles+1 {
		t.Errorf("%d services extending one file: %d pods, errors %q; want every pod (one file read)", compose.MaxReferencedFiles+1, len(pods), errs)
	}
}

// Promise: a relative extends.file is taken from the folder of the file
// it is in. rebaseExtends rewrites only a scalar written literally at
// services.NAME.extends.file: through an alias (of services, of the
// service, of the value) or a merge key, compose-go still sees the
// relative path and resolves it from the project's root: another file of
// the project is used, silently.
func TestAttackExtendsRebaseMissesAliases(t *testing.T) {
	tests := map[string]string{
		"alias of services":  "x-s: &s\n  web:\n    extends: {file: b.yaml, service: b}\nservices: *s\n",
		"merge key":          "x-e: &e\n  extends: {file: b.yaml, service: b}\nservices:\n  web:\n    <<: *e\n",
		"alias of the value": "x-f: &f b.yaml\nservices:\n  web:\n    extends: {file: *f, service: b}\n",
		"alias of extends":   "x-e: &e {file: b.yaml, service: b}\nservices:\n  web:\n    extends: *e\n",
		"alias of a service": "x-w: &w\n  extends: {file: b.yaml, service: b}\nservices:\n  web: *w\n",
	}
	for name, a := range tests {
		t.Run(name, func(t *testing.T) {
			files := mapFiles{
				"compose.yaml": "services:\n  web:\n    extends: {file: sub/a.yaml, service: web}\n",
				"sub/a.yaml":   a,
				"sub/b.yaml":   "services:\n  b: {image: from-sub-b}\n",
				"b.yaml":       "services:\n  b: {image: from-root-b}\n",
			}
			pods, errs := load(t, files, compose.Options{})
			if refusedAlias(errs) {
				return // refused by name: never the wrong file, silently
			}
			if len(errs) > 0 || len(pods) != 1 {
				t.Fatalf("pods %d, errors %q", len(pods), errs)
			}
			if got := pods[0].Manifest.Containers[0].Image; got != "from-sub-b" {
				t.Errorf("image %q, want from-sub-b (sub/a.yaml extends its neighbour sub/b.yaml, not the root's b.yaml)", got)
			}
		})
	}
}

// Promise: rebaseExtends changes nothing but extends.file. It rewrites the
// scalar node in place, so an anchor on it carries the rewrite to every
// alias of it elsewhere in the file.
func TestAttackExtendsRebaseRewritesAliasedValues(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web:\n    extends: {file: sub/a.yaml, service: web}\n",
		"sub/a.yaml":   "services:\n  web:\n    extends: {file: &f b.yaml, service: b}\n    environment: {BASE_FILE: *f}\n",
		"sub/b.yaml":   "services:\n  b: {image: busybox}\n",
	}
	pods, errs := load(t, files, compose.Options{})
	if refusedAlias(errs) {
		return // refused by name: no value changed behind the author's back
	}
	if len(errs) > 0 || len(pods) != 1 {
		t.Fatalf("pods %d, errors %q", len(pods), errs)
	}
	for _, e := range pods[0].Manifest.Containers[0].Env {
		if e.Name == "BASE_FILE" && e.Value != "b.yaml" {
			t.Errorf("BASE_FILE=%q, want b.yaml as written", e.Value)
		}
	}
}

// Promise: an error names the file it is about. shown() replaces each
// memory file's path with strings.ReplaceAll in map order, and
// /proc/self/fd/5 is a prefix of /proc/self/fd/5x: an error about the
// 60-somethingth file is pinned, at random, on an earlier one
// ("failed to parse f00.yaml0").
func TestAttackExtendsErrorNamesItsFile(t *testing.T) {
	files := mapFiles{"compose.yaml": "services:\n  web: {extends: {file: f00.yaml, service: b}}\n"}
	const last = compose.MaxReferencedFiles - 2
	for i := 0; i < last; i++ {
		files[fmt.Sprintf("f%02d.yaml", i)] = fmt.Sprintf("services:\n  b: {extends: {file: f%02d.yaml, service: b}}\n", i+1)
	}
	files[fmt.Sprintf("f%02d.yaml", last)] = "services: [\n"
	want := fmt.Sprintf("failed to parse f%02d.yaml:", last)
	for run := 0; run < 20; run++ {
		_, errs := load(t, files, compose.Options{})
		if text := strings.Join(errs, "\n"); !strings.Contains(text, want) {
			t.Fatalf("run %d: errors %q, want %q", run, errs, want)
		}
	}
}

// Promise: a path in a home folder is refused, as in the main file
// ("depends on who runs hostlet"). In an extended file compose-go expands
// ~ itself (paths.ExpandUser, from $HOME) before hostlet sees it: the
// bind becomes one of the runner's home folder, accepted, and an env_file
// error shows the home folder. (The helper runs with an empty
// environment, so there $HOME is unset and ~ stays; in-process it is
// expanded.)
func TestAttackExtendsTildeExpanded(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	pods, errs := load(t, extendsBase("services:\n  base:\n    image: busybox\n    volumes: ['~/.ssh:/root/.ssh']\n    env_file: ['~/.env']\n"), compose.Options{})
	for _, e := range errs {
		if strings.Contains(e, home) {
			t.Errorf("an error shows the runner's home folder: %s", e)
		}
	}
	for _, p := range pods {
		for _, v := range p.Manifest.Volumes {
			if strings.HasPrefix(v.HostPath, home) {
				t.Errorf("pod %s binds %s, the runner's home folder, from ~/.ssh", p.Manifest.ID, v.HostPath)
			}
		}
	}
	if !strings.Contains(strings.Join(errs, "\n"), "a path in a home folder") {
		t.Errorf("errors %q, want ~/.ssh refused as in the main file", errs)
	}
}

// refusedAlias reports whether the errors are one refusal of an anchor,
// alias or merge key on the way to an extends.file in a sub-folder's file,
// naming that file: an acceptable answer to the two tests above.
func refusedAlias(errs []string) bool {
	return len(errs) == 1 && strings.Contains(errs[0], "sub/a.yaml: services") &&
		(strings.Contains(errs[0], "anchor") || strings.Contains(errs[0], "alias"))
}
