package sources

import (
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
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
