package gitsource_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// pinnedTree is a commit using every rule of the tree reader: nested
// folders, hidden entries, the three endings and others, a list, a
// decode error, a build (its context outside the source path, with an
// executable file), Compose projects (hidden files, an executable, a
// nested project, a link and a file over the size limit as their data),
// a file over the size limit, a symlinked manifest (written by the test).
var pinnedTree = map[string]string{
	"hosts/web/web.yaml":                "version: v1beta1\nid: web\ncontainers: [{name: app, image: example.org/web:1}]\n",
	"hosts/web/list.yml":                "- version: v1beta1\n  id: a\n  containers: [{name: app, image: example.org/a:1}]\n- version: v1beta1\n  id: b\n  containers: [{name: app, image: example.org/b:1}]\n",
	"hosts/web/api.json":                `{"version": "v1beta1", "id": "api", "containers": [{"name": "app", "image": "example.org/api:1"}]}`,
	"hosts/web/Upper.YAML":              "version: v1beta1\nid: upper\ncontainers: [{name: app, image: example.org/upper:1}]\n",
	"hosts/web/notes.txt":               "not a manifest\n",
	"hosts/web/.hidden.yaml":            "not: read\n",
	"hosts/web/.hid/x.yaml":             "not: read\n",
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
	"hosts/links/web.yaml":              "version: v1beta1\nid: web\ncontainers: [{name: app, image: example.org/web:1}]\n",
}

// pinnedCommit is the commit of pinnedTree made by pinnedRepo: its hash
// is the revision the git source reports.
const pinnedCommit = "b952cf642ca2d8a78040ff52c58e1aed6519c940"

// pinnedRepo commits pinnedTree (with fixed authors and dates, so the
// commit's hash is always the same) in a new checkout, and returns the
// checkout and its commit.
func pinnedRepo(t *testing.T) (string, *object.Commit) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	for name, content := range pinnedTree {
		testkit.WriteFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
	for _, name := range []string{"ctx/run.sh", "hosts/web/shop/run.sh"} {
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(name)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("#", manifest.MaxSize+1)
	testkit.WriteFile(t, filepath.Join(dir, "hosts", "web", "big.yaml"), big)
	testkit.WriteFile(t, filepath.Join(dir, "hosts", "errs", "big", "big.env"), big)
	testkit.WriteFile(t, filepath.Join(dir, "bigctx", "big"), big)
	for link, target := range map[string]string{
		"hosts/web/shop/conf/secret.env": "/etc/passwd",
		"hosts/errs/link/link.env":       "../../web/shop/.env",
		"hosts/links/linked.yaml":        "web.yaml",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	env := append(gittest.Env(t.TempDir()), "GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z")
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "--all"}, {"commit", "--quiet", "--no-gpg-sign", "-m", "pinned"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return dir, commit
}

// dumpRead is what a read gives, one line each: the files read, every
// manifest (origin, id, images, errors) and the error.
func dumpRead(ms []manifest.Sourced, files int, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "files %d\n", files)
	for _, s := range ms {
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
	return b.String()
}

// TestReadCommitPinned: what the git source reads from one commit (its
// manifests, their origins, the files counted, every error's text and the
// files it names) stays what it was, byte for byte, and so does the
// revision it reports for the commit.
func TestReadCommitPinned(t *testing.T) {
	t.Parallel()
	dir, commit := pinnedRepo(t)
	r := composetest.Renderer(t, project.Host{})
	ctx := context.Background()
	for _, tt := range []struct {
		paths []string
		want  string
	}{
		{[]string{"hosts/web"}, pinnedWeb},
		{[]string{"hosts/web/shop/compose.yaml", "ctx", "/hosts/./web/web.yaml", "hosts/errs"}, pinnedOther},
		{[]string{"hosts/web", "hosts/links"}, pinnedLinks},
		{[]string{"hosts/web", "hosts/missing"}, pinnedMissing},
		{[]string{"hosts/web/shop/run.sh/x"}, pinnedNotAFolder},
		{[]string{"hosts/builds"}, pinnedBuilds},
	} {
		ms, files, err := gitsource.ReadCommit(ctx, commit, tt.paths, "fleet", r)
		if got := dumpRead(ms, files, err); got != tt.want {
			t.Errorf("paths %q:\n%s\nwant:\n%s", tt.paths, got, tt.want)
		}
	}
	snap, err := gitsource.ReadAt(ctx, dir, "HEAD", config.Source{Name: "fleet", Type: config.TypeGit, Path: "hosts/web"}, r)
	if snap.Revision != pinnedCommit {
		t.Errorf("revision %s, want %s", snap.Revision, pinnedCommit)
	}
	if got := dumpRead(snap.Manifests, snap.Files, err); got != pinnedWeb {
		t.Errorf("ReadAt:\n%s\nwant:\n%s", got, pinnedWeb)
	}
}

const pinnedWeb = `files 16
fleet:hosts/web/Upper.YAML upper [example.org/upper:1]
fleet:hosts/web/api.json api [example.org/api:1]
fleet:hosts/web/bad.yaml bad [example.org/bad:1]
  error fleet:hosts/web/bad.yaml: pod "bad": nope: unknown field
fleet:hosts/web/built.yaml built [hostlet-build/built-app:75258c6e5a757b82508dffd5e45e216e]
fleet:hosts/web/list.yml a [example.org/a:1]
fleet:hosts/web/list.yml b [example.org/b:1]
fleet:hosts/web/outside.yaml outside []
  error fleet:hosts/web/outside.yaml: pod "outside": containers[0].build.context: "../../../..": must be a folder of the repository, relative to the manifest's file
fleet:hosts/web/shop/compose.yaml shop-web [busybox:1.36]
fleet:hosts/web/sub/deep.yaml deep [example.org/deep:1]
fleet:hosts/web/web.yaml web [example.org/web:1]
fleet:hosts/web/zz/compose.yml zz-z [busybox]
error 1 error occurred:
	* fleet:hosts/web/big.yaml: 10485761 bytes: larger than the size limit of 10485760 bytes
`

const pinnedOther = `files 12
fleet:hosts/web/shop/compose.yaml shop-web [busybox:1.36]
fleet:hosts/web/web.yaml web [example.org/web:1]
fleet:hosts/errs/big/compose.yaml big-web [busybox]
  error fleet:hosts/errs/big/compose.yaml: services.web.env_file[0]: big.env: big.env: 10485761 bytes: larger than the size limit of 10485760 bytes
fleet:hosts/errs/link/compose.yaml link-web [busybox]
  error fleet:hosts/errs/link/compose.yaml: services.web.env_file[0]: link.env: link.env is a symlink; files in git must be regular files
`

const pinnedLinks = `files 0
error path "hosts/links" at commit b952cf642ca2: hosts/links/linked.yaml is a symlink; manifests in git must be regular files
`

const pinnedMissing = `files 0
error path "hosts/missing" at commit b952cf642ca2: not found
`

const pinnedNotAFolder = `files 0
error path "hosts/web/shop/run.sh/x" at commit b952cf642ca2: object not found
`

// TestReadCommitBoundErrorPinned: the error of a commit past
// manifest.MaxSourceManifests names the first file not read, or no file
// when the last file crossed the bound.
func TestReadCommitBoundErrorPinned(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		files int
		want  string
	}{
		{manifest.MaxSourceManifests/manifest.MaxFileManifests + 2, "manifests 6000, error fleet:manifests/06.yaml: more than 5000 manifests in one source: too many manifests; split it into several sources"},
		{manifest.MaxSourceManifests/manifest.MaxFileManifests + 1, "manifests 6000, error fleet: more than 5000 manifests in one source: too many manifests; split it into several sources"},
	} {
		repo := gittest.NewRepo(t)
		for i := range tt.files {
			var b strings.Builder
			for j := range manifest.MaxFileManifests {
				fmt.Fprintf(&b, "- {version: v1beta1, id: p%d-%d}\n", i, j)
			}
			repo.Write(fmt.Sprintf("manifests/%02d.yaml", i), b.String())
		}
		repo.Commit("full")
		r, err := git.PlainOpen(repo.Work)
		if err != nil {
			t.Fatal(err)
		}
		head, err := r.Head()
		if err != nil {
			t.Fatal(err)
		}
		commit, err := r.CommitObject(head.Hash())
		if err != nil {
			t.Fatal(err)
		}
		ms, _, err := gitsource.ReadCommit(context.Background(), commit, []string{"manifests"}, "fleet", nil)
		got := fmt.Sprintf("manifests %d, error %s", len(ms), strings.TrimSpace(strings.TrimPrefix(err.Error(), "1 error occurred:\n\t* ")))
		if got != tt.want {
			t.Errorf("%d files: %s, want %s", tt.files, got, tt.want)
		}
	}
}

const pinnedBuilds = `files 1
fleet:hosts/builds/b.yaml b [,,,hostlet-build/b-up:75258c6e5a757b82508dffd5e45e216e]
  error fleet:hosts/builds/b.yaml: pod "b": containers[0].build.dockerfile: Dockerfile: no such file in the context
  error fleet:hosts/builds/b.yaml: pod "b": containers[1].build.dockerfile: Dockerfile: no such file in the context
  error fleet:hosts/builds/b.yaml: pod "b": containers[2].build.context: big: 10485761 bytes: larger than the size limit of 10485760 bytes
`
