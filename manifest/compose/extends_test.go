package compose_test

// extends.file (bundleFiles, rebaseExtends): a file of the project only,
// taken from the folder of the file naming it, held to the main file's
// rules. Each test states the promise it checks.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
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

// TestExtendedFileWatchPathTouchesNoHostPath: nothing outside the project
// is touched, and errors show no memory file or helper internals.
// compose-go resolves the paths of an extended file (loadExtendsBase ->
// paths.ResolveRelativePaths, run even with ResolvePaths false), and
// services.*.develop.watch.*.path goes through utils.ResolveSymbolicLink:
// os.Lstat on every component of a host path of the author's choosing and
// filepath.EvalSymlinks on the first link, whose error is shown. That is
// an oracle on the host's links (a dangling link's target), the helper's
// pid and its fd table (pipe inodes, "memfd:hostlet-compose"), unless
// develop is refused before compose-go sees it.
func TestExtendedFileWatchPathTouchesNoHostPath(t *testing.T) {
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

// TestExtendsFileThroughAliasesIsFromItsOwnFolder: a relative
// extends.file is taken from the folder of the file it is in, or refused.
// rebaseExtends rewrites only a scalar written literally at
// services.NAME.extends.file: through an alias (of services, of the
// service, of the value) or a merge key, compose-go would still see the
// relative path and resolve it from the project's root: another file of
// the project used, silently.
func TestExtendsFileThroughAliasesIsFromItsOwnFolder(t *testing.T) {
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

// TestExtendsRebaseLeavesAliasedValuesAlone: rebaseExtends changes
// nothing but extends.file. Rewriting the scalar node in place, an anchor
// on it would carry the rewrite to every alias of it elsewhere in the
// file.
func TestExtendsRebaseLeavesAliasedValuesAlone(t *testing.T) {
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

// TestExtendsErrorNamesItsFile: an error names the file it is about.
// shown() replaced each memory file's path with strings.ReplaceAll in map
// order, and /proc/self/fd/5 is a prefix of /proc/self/fd/5x: an error
// about the 60-somethingth file was pinned, at random, on an earlier one
// ("failed to parse f00.yaml0").
func TestExtendsErrorNamesItsFile(t *testing.T) {
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

// TestExtendedFileHomePathRefused: a path in a home folder is refused, as
// in the main file ("depends on who runs hostlet"). In an extended file
// compose-go expands ~ itself (paths.ExpandUser, from $HOME) before
// hostlet sees it: the bind would become one of the runner's home folder,
// accepted, and an env_file error show the home folder. (The helper runs
// with an empty environment, so there $HOME is unset and ~ stays;
// in-process it is expanded.)
func TestExtendedFileHomePathRefused(t *testing.T) {
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

// outsideCompose writes a Compose file outside any project (another team's
// project on the same host, say) and returns its path.
func outsideCompose(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "compose.yaml")
	body := "services:\n  db:\n    image: stolen\n    environment:\n      OTHER_TEAM_DB_PASSWORD: s3cr3t-from-outside\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExtendsFileOutsideTheProjectIsRefused (promise 1): nothing outside
// the project is read, however the file is written. preScan refused
// extends.file by decoding the FIRST YAML document with yaml.v3 and gave
// up (returned no finding) on any decode error; compose-go loads every
// document of the stream and accepts tags yaml.v3 refuses. Either way
// compose-go then read the named host file itself (os.ReadFile, as the
// helper's user, root on a Docker host) and merged its service into the
// author's, secrets included. /dev/zero as the file made the helper
// allocate without bound until the 60 s timeout.
func TestExtendsFileOutsideTheProjectIsRefused(t *testing.T) {
	outside := outsideCompose(t)
	tests := []struct {
		name string
		file string
	}{
		{"second YAML document", "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: " + outside + ", service: db}\n"},
		{"!reset tag on a sibling service", "services:\n  web:\n    image: x\n    extends: {file: " + outside + ", service: db}\n  other: !reset null\n"},
		{"relative path out of the working dir", "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: ../../../../../../../../../../.." + outside + ", service: db}\n"},
	}
	check := func(t *testing.T, pods []manifest.Sourced, errs []string) {
		t.Helper()
		for _, p := range pods {
			for _, c := range p.Manifest.Containers {
				for _, e := range c.Env {
					if strings.Contains(e.Value, "s3cr3t-from-outside") {
						t.Errorf("pod %s got %s=%s from %s, a file outside the project", p.Manifest.ID, e.Name, e.Value, outside)
					}
				}
			}
		}
		refused := false
		for _, e := range errs {
			// Refused by the pre-scan (earlier), or by the project's own
			// loader, which reads only files of the project.
			if strings.Contains(e, "extends.file") || strings.Contains(e, "not a host path") || strings.Contains(e, "leaves the project folder") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("extends.file not refused; errors %q", errs)
		}
	}
	for _, tt := range tests {
		t.Run("folder/"+tt.name, func(t *testing.T) {
			pods, errs := load(t, mapFiles{"compose.yaml": tt.file}, compose.Options{})
			check(t, pods, errs)
		})
		t.Run("http body/"+tt.name, func(t *testing.T) {
			pods, err := compose.LoadBytes(context.Background(), []byte(tt.file), compose.Options{Source: "edge"})
			check(t, pods, errorTexts(t, pods, err))
		})
	}
	// The existence of any host path is an oracle too.
	t.Run("existence oracle", func(t *testing.T) {
		_, errs := load(t, mapFiles{"compose.yaml": "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: /nonexistent/hostlet-probe, service: db}\n"}, compose.Options{})
		for _, e := range errs {
			if strings.Contains(e, "no such file") {
				t.Errorf("error reports on a host path: %s", e)
			}
		}
	})
}
