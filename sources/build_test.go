package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// A native pod built from a folder of a file source: the build is read
// (context files after .dockerignore, the image named after them); the
// saved last good set holds the context once and gives it back whole.
func TestNativeBuildReadAndSaved(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "app", "Dockerfile"), "FROM scratch\nCOPY . /\n")
	testkit.WriteFile(t, filepath.Join(dir, "app", "main.go"), "package main\n")
	testkit.WriteFile(t, filepath.Join(dir, "app", ".dockerignore"), "*.md\n")
	testkit.WriteFile(t, filepath.Join(dir, "app", "notes.md"), "not sent\n")
	testkit.WriteFile(t, filepath.Join(dir, "pods", "web.yaml"), "version: v1beta1\nid: web\ncontainers:\n  - {name: a, build: {context: ../app}}\n  - {name: b, image: example.org/b:1, build: {context: ../app}}\n")
	snap, err := ReadTree(t.Context(), dir, []string{"pods"}, "local", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Manifests[0]
	if len(m.Errors) > 0 {
		t.Fatalf("errors: %v", m.Errors)
	}
	a, b := m.Manifest.Containers[0], m.Manifest.Containers[1]
	if len(a.Build.Files.Items) != 3 || a.Build.Files.Source != "app" || b.Build.Image != "example.org/b:1" {
		t.Fatalf("builds %+v / %+v: want 3 context files of app, b named example.org/b:1", a.Build.Files, b.Build)
	}
	if &a.Build.Files.Items[0].Data[0] != &b.Build.Files.Items[0].Data[0] {
		t.Error("two builds of one folder hold two copies of its files")
	}
	st, err := OpenStore(t.TempDir(), nil, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(savedSet{Name: "local", Type: "file", Revision: snap.Revision, Manifests: snap.Manifests}); err != nil {
		t.Fatal(err)
	}
	if m.Manifest.Containers[0].Build.Files.Items == nil {
		t.Fatal("saving changed the set in memory")
	}
	got, found, _, damaged := st.Load("local")
	if !found || damaged != "" {
		t.Fatalf("load: found %v, damaged %q", found, damaged)
	}
	ga := got.Manifests[0].Manifest.Containers[0]
	if ga.Build.Files == nil || ga.Build.Files.Digest() != a.Build.Files.Digest() || ga.Image != a.Image {
		t.Errorf("loaded build %+v, want the context saved (digest %s)", ga.Build, a.Build.Files.Digest())
	}
}

// TestBuildContextOfSingleFileSourceStaysInTheSource (issue 15 review): a
// file source whose path is ONE file (sources: [{type: file, path:
// /etc/hostlet/pods.yaml}]): the source is that file, yet a build's
// context "." is the file's whole folder, so its author ships every file
// beside it into an image it then runs: the API token, the git token, the
// host config, the age key (hostlet reads them as root). The design: "a
// context outside the source is an error".
func TestBuildContextOfSingleFileSourceStaysInTheSource(t *testing.T) {
	etc := t.TempDir()
	testkit.WriteFile(t, filepath.Join(etc, "token"), "api-token-of-the-host")
	if err := os.Chmod(filepath.Join(etc, "token"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(etc, "hostlet.yaml"), "tokenFile: /etc/hostlet/token\n")
	pods := filepath.Join(etc, "pods.yaml")
	testkit.WriteFile(t, pods, `version: v1beta1
id: thief
containers:
  - name: app
    build:
      context: .
      dockerfileInline: "FROM scratch\nCOPY . /loot/\n"
`)
	snap, err := ReadTree(t.Context(), "", []string{pods}, "local", nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(snap.Manifests) != 1 {
		t.Fatalf("manifests %+v", snap.Manifests)
	}
	m := snap.Manifests[0]
	if len(m.Errors) > 0 {
		t.Logf("refused: %v", m.Errors[0])
		return
	}
	b := m.Manifest.Containers[0].Build
	var names []string
	for _, it := range b.Files.Items {
		names = append(names, it.Path)
		if it.Path == "token" {
			t.Errorf("the build of a single-file source sends %q (%q) from outside the source into the image; context files: %q",
				it.Path, it.Data, names)
		}
	}
}

// TestBuildContextSharedByPodsIsHeldOnce (issue 15 review): one manifest
// file of N pods, each built from the same context: every pod's build
// reads the context again, so a source of MaxBytes (40 MiB) of context
// files costs N × 40 MiB of memory (and N reads and digests of it) at
// every read of the source: the bounds of a context do not bound a source.
// 30 pods over a 9 MiB context hold 270 MiB here; a 10 MiB manifest file
// can hold tens of thousands of such pods.
func TestBuildContextSharedByPodsIsHeldOnce(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 9<<20)
	testkit.WriteFile(t, filepath.Join(dir, "ctx", "blob"), big)
	testkit.WriteFile(t, filepath.Join(dir, "ctx", "Dockerfile"), "FROM scratch\nCOPY . /\n")
	var doc strings.Builder
	const n = 30
	for i := range n {
		fmt.Fprintf(&doc, "---\nversion: v1beta1\nid: p%02d\ncontainers:\n  - name: app\n    build: {context: ./ctx}\n", i)
	}
	testkit.WriteFile(t, filepath.Join(dir, "pods.yaml"), doc.String())
	snap, err := ReadTree(t.Context(), "", []string{dir}, "local", nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var held int
	var arrays []*byte
	for _, s := range snap.Manifests {
		for _, c := range s.Manifest.Containers {
			if c.Build == nil || c.Build.Files == nil {
				t.Fatalf("pod %s: build not resolved: %v", s.Manifest.ID, s.Errors)
			}
			for _, it := range c.Build.Files.Items {
				if len(it.Data) > 0 && !slices.Contains(arrays, &it.Data[0]) {
					arrays = append(arrays, &it.Data[0])
					held += len(it.Data)
				}
			}
		}
	}
	if held > buildctx.MaxBytes {
		t.Errorf("one source read holds %d MiB of build contexts (%d pods × the same 9 MiB context), over a context's bound of %d MiB",
			held>>20, n, buildctx.MaxBytes>>20)
	}
}

// TestSavedSetHoldsASharedBuildContextOnce (issue 15 review): the last
// good set saved under stateDir (sources/NAME.json, sealed) holds every
// pod's copy of its build context, base64 in JSON: a source of 8 pods over
// one 9 MiB context writes ~100 MiB to stateDir at every change of the set
// (and holds it twice in memory to encode and seal it); its Good entries
// hold the same again. The disk the operator gave stateDir fills with
// copies of one folder.
func TestSavedSetHoldsASharedBuildContextOnce(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "ctx", "blob"), strings.Repeat("y", 9<<20))
	testkit.WriteFile(t, filepath.Join(dir, "ctx", "Dockerfile"), "FROM scratch\nCOPY . /\n")
	var doc strings.Builder
	const n = 8
	for i := range n {
		fmt.Fprintf(&doc, "---\nversion: v1beta1\nid: p%02d\ncontainers:\n  - name: app\n    build: {context: ./ctx}\n", i)
	}
	testkit.WriteFile(t, filepath.Join(dir, "pods.yaml"), doc.String())
	snap, err := ReadTree(t.Context(), "", []string{dir}, "local", nil)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	stateDir := t.TempDir()
	st, err := OpenStore(stateDir, nil, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(savedSet{Name: "local", Type: "file", Revision: snap.Revision, Manifests: snap.Manifests}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(st.path("local"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > int64(buildctx.MaxBytes) {
		t.Errorf("the saved set of a source with %d pods over one 9 MiB context is %d MiB in stateDir", n, fi.Size()>>20)
	}
}
