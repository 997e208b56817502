package sources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// pinnedTree is a source folder using every rule of the tree reader:
// nested folders, hidden entries, the three endings and others, a list,
// a decode error, a build (its context outside the source path, with an
// executable file), a Compose project (hidden files, an executable, a
// nested project; links and a file over the size limit as their data)
// and a file over the size limit (written by the test).
var pinnedTree = map[string]string{
	"hosts/web/web.yaml":                "version: v1beta1\nid: web\ncontainers: [{name: app, image: example.org/web:1}]\n",
	"hosts/web/list.yml":                "- version: v1beta1\n  id: a\n  containers: [{name: app, image: example.org/a:1}]\n- version: v1beta1\n  id: b\n  containers: [{name: app, image: example.org/b:1}]\n",
	"hosts/web/api.json":                `{"version": "v1beta1", "id": "api", "containers": [{"name": "app", "image": "example.org/api:1"}]}`,
	"hosts/web/Upper.YAML":              "version: v1beta1\nid: upper\ncontainers: [{name: app, image: example.org/upper:1}]\n",
	"hosts/web/notes.txt":               "not a manifest\n",
	"hosts/web/.hidden.yaml":            "not: read\n",
	"hosts/web/.git/x.yaml":             "not: read\n",
	"hosts/web/sub/deep.yaml":           "version: v1beta1\nid: deep\ncontainers: [{name: app, image: example.org/deep:1}]\n",
	"hosts/web/bad.yaml":                "version: v1beta1\nid: bad\nnope: 1\ncontainers: [{name: app, image: example.org/bad:1}]\n",
	"hosts/web/built.yaml":              "version: v1beta1\nid: built\ncontainers: [{name: app, build: {context: ../../ctx}}]\n",
	"hosts/web/outside.yaml":            "version: v1beta1\nid: outside\ncontainers: [{name: app, build: {context: ../../../..}}]\n",
	"ctx/Dockerfile":                    "FROM scratch\nCOPY . /\n",
	"ctx/run.sh":                        "#!/bin/sh\n",
	"hosts/web/shop/compose.yaml":       "services:\n  web:\n    image: busybox:${TAG}\n    env_file: [conf/web.env]\n    volumes: ['./run.sh:/run.sh']\n",
	"hosts/web/shop/.env":               "TAG=1.36\n",
	"hosts/web/shop/run.sh":             "#!/bin/sh\n",
	"hosts/web/shop/conf/web.env":       "MODE=prod\n",
	"hosts/web/shop/conf/data.yaml":     "not: a manifest\n",
	"hosts/web/shop/.cache/x":           "skipped\n",
	"hosts/web/shop/inner/compose.yaml": "services: {inner: {image: busybox}}\n",
	"hosts/web/zz/compose.yml":          "services: {z: {image: busybox}}\n",
	"hosts/builds/b.yaml":               "version: v1beta1\nid: b\ncontainers: [{name: file, build: {context: ../../ctx/run.sh}}, {name: missing, build: {context: ../missing}}, {name: big, build: {context: ../../bigctx}}, {name: up, build: {context: ../../ctx/../ctx}}]\n",
	"bigctx/Dockerfile":                 "FROM scratch\nCOPY big /\n",
	"hosts/errs/link/compose.yaml":      "services: {web: {image: busybox, env_file: [link.env]}}\n",
	"hosts/errs/big/compose.yaml":       "services: {web: {image: busybox, env_file: [big.env]}}\n",
	"hosts/errs/abs/compose.yaml":       "services: {web: {image: busybox, env_file: [abs.env]}}\n",
	"hosts/errs/abs/real.env":           "A=1\n",
}

// pinnedExec are the fixture's executable files.
var pinnedExec = []string{"ctx/run.sh", "hosts/web/shop/run.sh"}

// writePinnedTree writes pinnedTree below dir, with a file over
// manifest.MaxSize and a link out of the Compose project's folder.
func writePinnedTree(t *testing.T, dir string) {
	t.Helper()
	for name, content := range pinnedTree {
		testkit.WriteFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
	for _, name := range pinnedExec {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("#", manifest.MaxSize+1)
	testkit.WriteFile(t, filepath.Join(dir, "hosts", "web", "big.yaml"), big)
	testkit.WriteFile(t, filepath.Join(dir, "hosts", "errs", "big", "big.env"), big)
	testkit.WriteFile(t, filepath.Join(dir, "bigctx", "big"), big)
	outside := filepath.Join(t.TempDir(), "secret.env")
	testkit.WriteFile(t, outside, "PASSWORD=hunter2\n")
	symlink(t, outside, filepath.Join(dir, "hosts", "web", "shop", "conf", "secret.env"))
	symlink(t, filepath.Join("..", "web.yaml"), filepath.Join(dir, "hosts", "web", "sub", "linked.yaml"))
	symlink(t, filepath.Join("..", "web"), filepath.Join(dir, "hosts", "folderlink", "web.yaml"))
	symlink(t, outside, filepath.Join(dir, "hosts", "errs", "link", "link.env"))
	symlink(t, filepath.Join(dir, "hosts", "errs", "abs", "real.env"), filepath.Join(dir, "hosts", "errs", "abs", "abs.env"))
}

// dumpSnapshot is what a read gives, one line each: the revision, the
// files read, every manifest (origin, id, images, errors) and the error.
func dumpSnapshot(snap manifest.Snapshot, err error, replace ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %s\nfiles %d\n", snap.Revision, snap.Files)
	for _, s := range snap.Manifests {
		var images []string
		for _, c := range s.Manifest.Containers {
			images = append(images, c.Image)
		}
		fmt.Fprintf(&b, "%s %s [%s]\n", s.Origin, s.Manifest.ID, strings.Join(images, ","))
		for _, e := range s.Errors {
			fmt.Fprintf(&b, "  error %v\n", e)
		}
	}
	if err != nil {
		fmt.Fprintf(&b, "error %s\n", strings.TrimRight(err.Error(), "\n"))
	}
	out := b.String()
	for i := 0; i+1 < len(replace); i += 2 {
		out = strings.ReplaceAll(out, replace[i], replace[i+1])
	}
	return out
}

// TestReadTreeRevisionAndErrorsPinned: the revision a folder source
// reports is in status documents and saved state, and its errors are in
// both: for one fixture they stay what they were, byte for byte, whether
// the source's paths are relative to a base folder or absolute.
func TestReadTreeRevisionAndErrorsPinned(t *testing.T) {
	dir := t.TempDir()
	writePinnedTree(t, dir)
	r := composetest.Renderer(t, project.Host{})
	snap, err := ReadTree(context.Background(), dir, []string{"hosts/web"}, "local", r)
	got := dumpSnapshot(snap, err, dir, "DIR")
	if got != pinnedRelative {
		t.Errorf("read relative to a base folder:\n%s\nwant:\n%s", got, pinnedRelative)
	}
	snap, err = ReadTree(context.Background(), dir, []string{"hosts/builds"}, "local", r)
	got = dumpSnapshot(snap, err, dir, "DIR")
	if got != pinnedBuilds {
		t.Errorf("read builds whose contexts are a file, missing, holding a file over the size limit:\n%s\nwant:\n%s", got, pinnedBuilds)
	}
	// Paths as given (no base folder): named as given, absolute or not.
	t.Chdir(dir)
	snap, err = ReadTree(context.Background(), "", []string{"hosts/web", filepath.Join("hosts", "web", "web.yaml")}, "local", r)
	got = dumpSnapshot(snap, err, dir, "DIR")
	if got != pinnedAsGiven {
		t.Errorf("read from paths as given:\n%s\nwant:\n%s", got, pinnedAsGiven)
	}
	snap, err = ReadTree(context.Background(), "", []string{filepath.Join(dir, "hosts", "web")}, "local", r)
	got = dumpSnapshot(snap, err, dir, "DIR")
	// The names, and so the revision, hold the temporary folder.
	got = got[strings.Index(got, "\n")+1:]
	if got != pinnedAbsolute {
		t.Errorf("read from an absolute path:\n%s\nwant:\n%s", got, pinnedAbsolute)
	}
	snap, err = ReadTree(context.Background(), dir, []string{"hosts/web/shop/compose.yaml", "hosts/web/missing", "ctx", "hosts/folderlink", "hosts/errs"}, "local", r)
	got = dumpSnapshot(snap, err, dir, "DIR")
	if got != pinnedOther {
		t.Errorf("read a Compose file, a missing path, a folder without manifests, a link to a folder and projects with bad data:\n%s\nwant:\n%s", got, pinnedOther)
	}
}

const pinnedRelative = `revision sha256:9489472ca98ce002
files 17
local:hosts/web/Upper.YAML upper [example.org/upper:1]
local:hosts/web/api.json api [example.org/api:1]
local:hosts/web/bad.yaml bad [example.org/bad:1]
  error local:hosts/web/bad.yaml: pod "bad": nope: unknown field
local:hosts/web/built.yaml built [hostlet-build/built-app:75258c6e5a757b82508dffd5e45e216e]
local:hosts/web/list.yml a [example.org/a:1]
local:hosts/web/list.yml b [example.org/b:1]
local:hosts/web/outside.yaml outside []
  error local:hosts/web/outside.yaml: pod "outside": containers[0].build.context: "../../../..": must be a folder of the source, relative to the manifest's file
local:hosts/web/shop/compose.yaml shop-web [busybox:1.36]
local:hosts/web/sub/deep.yaml deep [example.org/deep:1]
local:hosts/web/sub/linked.yaml web [example.org/web:1]
local:hosts/web/web.yaml web [example.org/web:1]
local:hosts/web/zz/compose.yml zz-z [busybox]
error 1 error occurred:
	* local:hosts/web/big.yaml: 10485761 bytes: larger than the size limit of 10485760 bytes
`

const pinnedBuilds = `revision sha256:45b7052604d131c1
files 1
local:hosts/builds/b.yaml b [,,,hostlet-build/b-up:75258c6e5a757b82508dffd5e45e216e]
  error local:hosts/builds/b.yaml: pod "b": containers[0].build.dockerfile: Dockerfile: not a directory
  error local:hosts/builds/b.yaml: pod "b": containers[1].build.dockerfile: Dockerfile: no such file in the context
  error local:hosts/builds/b.yaml: pod "b": containers[2].build.context: big: 10485761 bytes: larger than the size limit of 10485760 bytes
`

const pinnedAsGiven = `revision sha256:83aedd788aea284c
files 18
local:hosts/web/Upper.YAML upper [example.org/upper:1]
local:hosts/web/api.json api [example.org/api:1]
local:hosts/web/bad.yaml bad [example.org/bad:1]
  error local:hosts/web/bad.yaml: pod "bad": nope: unknown field
local:hosts/web/built.yaml built []
  error local:hosts/web/built.yaml: pod "built": containers[0].build.context: "../../ctx": must be a folder of the source, relative to the manifest's file
local:hosts/web/list.yml a [example.org/a:1]
local:hosts/web/list.yml b [example.org/b:1]
local:hosts/web/outside.yaml outside []
  error local:hosts/web/outside.yaml: pod "outside": containers[0].build.context: "../../../..": must be a folder of the source, relative to the manifest's file
local:hosts/web/shop/compose.yaml shop-web [busybox:1.36]
local:hosts/web/sub/deep.yaml deep [example.org/deep:1]
local:hosts/web/sub/linked.yaml web [example.org/web:1]
local:hosts/web/web.yaml web [example.org/web:1]
local:hosts/web/zz/compose.yml zz-z [busybox]
local:hosts/web/web.yaml web [example.org/web:1]
error 1 error occurred:
	* local:hosts/web/big.yaml: 10485761 bytes: larger than the size limit of 10485760 bytes
`

const pinnedAbsolute = `files 17
local:DIR/hosts/web/Upper.YAML upper [example.org/upper:1]
local:DIR/hosts/web/api.json api [example.org/api:1]
local:DIR/hosts/web/bad.yaml bad [example.org/bad:1]
  error local:DIR/hosts/web/bad.yaml: pod "bad": nope: unknown field
local:DIR/hosts/web/built.yaml built []
  error local:DIR/hosts/web/built.yaml: pod "built": containers[0].build.context: "../../ctx": must be a folder of the source, relative to the manifest's file
local:DIR/hosts/web/list.yml a [example.org/a:1]
local:DIR/hosts/web/list.yml b [example.org/b:1]
local:DIR/hosts/web/outside.yaml outside []
  error local:DIR/hosts/web/outside.yaml: pod "outside": containers[0].build.context: "../../../..": must be a folder of the source, relative to the manifest's file
local:DIR/hosts/web/shop/compose.yaml shop-web [busybox:1.36]
local:DIR/hosts/web/sub/deep.yaml deep [example.org/deep:1]
local:DIR/hosts/web/sub/linked.yaml web [example.org/web:1]
local:DIR/hosts/web/web.yaml web [example.org/web:1]
local:DIR/hosts/web/zz/compose.yml zz-z [busybox]
error 1 error occurred:
	* local:DIR/hosts/web/big.yaml: 10485761 bytes: larger than the size limit of 10485760 bytes
`

const pinnedOther = `revision sha256:9ef42ce64af28f5b
files 14
local:hosts/web/shop/compose.yaml shop-web [busybox:1.36]
local:hosts/errs/abs/compose.yaml abs-web [busybox]
  error local:hosts/errs/abs/compose.yaml: services.web.env_file[0]: abs.env: path escapes from parent
local:hosts/errs/big/compose.yaml big-web [busybox]
  error local:hosts/errs/big/compose.yaml: services.web.env_file[0]: big.env: 10485761 bytes: larger than the size limit of 10485760 bytes
local:hosts/errs/link/compose.yaml link-web [busybox]
  error local:hosts/errs/link/compose.yaml: services.web.env_file[0]: link.env: path escapes from parent
error 2 errors occurred:
	* local:hosts/web/missing: stat: no such file or directory
	* local:hosts/folderlink: DIR/hosts/folderlink/web.yaml: symlink to a folder is not followed
`

// TestReadTreeBoundErrorPinned: the error of a folder past
// manifest.MaxSourceManifests names the file whose manifests crossed the
// bound, whether more files follow it or not.
func TestReadTreeBoundErrorPinned(t *testing.T) {
	for _, tt := range []struct {
		files int
		want  string
	}{
		{manifest.MaxSourceManifests/manifest.MaxFileManifests + 2, "manifests 6000, error local:05.yaml: more than 5000 manifests in one source: too many manifests; split it into several sources"},
		{manifest.MaxSourceManifests/manifest.MaxFileManifests + 1, "manifests 6000, error local:05.yaml: more than 5000 manifests in one source: too many manifests; split it into several sources"},
	} {
		dir := t.TempDir()
		for i := range tt.files {
			testkit.WriteFile(t, filepath.Join(dir, fmt.Sprintf("%02d.yaml", i)), fullFile(i))
		}
		snap, err := ReadTree(context.Background(), dir, []string{"."}, "local", nil)
		got := fmt.Sprintf("manifests %d, error %s", len(snap.Manifests), strings.TrimSpace(strings.TrimPrefix(err.Error(), "1 error occurred:\n\t* ")))
		if got != tt.want {
			t.Errorf("%d files: %s, want %s", tt.files, got, tt.want)
		}
	}
}
