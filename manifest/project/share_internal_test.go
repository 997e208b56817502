package project

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// Equal files of several pods (a built service's replicas, services built
// from one folder) are held once after a render: one value by digest.
func TestShareFiles(t *testing.T) {
	files := func() *manifest.Files {
		return manifest.NewFiles("web", false, []manifest.FileItem{{Path: "Dockerfile", Data: []byte("FROM scratch\n")}})
	}
	pod := func(id string) manifest.Sourced {
		return manifest.Sourced{Manifest: manifest.Manifest{ID: id,
			Containers: []manifest.Container{{Name: "web", Build: &manifest.Build{Context: "web", Files: files()}}},
			Volumes:    []manifest.Volume{{Name: "conf", Files: files()}}}}
	}
	ms := []manifest.Sourced{pod("a"), pod("b")}
	ms[1].Manifest.Volumes[0].Files = manifest.NewFiles("web", true, ms[1].Manifest.Volumes[0].Files.Items)
	shareFiles(ms)
	a, b := ms[0].Manifest, ms[1].Manifest
	if a.Containers[0].Build.Files != b.Containers[0].Build.Files || a.Volumes[0].Files != a.Containers[0].Build.Files {
		t.Error("equal files of two pods are two values")
	}
	if b.Volumes[0].Files == a.Volumes[0].Files {
		t.Error("a secret's files were shared with a non-secret's of the same content")
	}
}

// keptAnswer is a render's answer of pods a and b, built from one folder
// of size bytes (one build context, shared) and one files volume each.
func keptAnswer(size int) Response {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	files := func() *manifest.Files {
		return manifest.NewFiles("web", false, []manifest.FileItem{{Path: "Dockerfile", Data: []byte("FROM scratch\n")}, {Path: "demo", Data: data}})
	}
	pod := func(id string) manifest.Sourced {
		return manifest.Sourced{Manifest: manifest.Manifest{ID: id, Labels: map[string]string{"tier": "web"},
			Containers: []manifest.Container{{Name: "web", Image: "web:1", Build: &manifest.Build{Context: "web", Args: map[string]string{"A": "1"}, Files: files()}}},
			Volumes:    []manifest.Volume{{Name: "conf", Files: manifest.NewFiles("conf", false, []manifest.FileItem{{Data: []byte(id)}})}, {Name: "data", DockerVolume: "data"}}}}
	}
	return Response{Manifests: []manifest.Sourced{pod("a"), pod("b")}}
}

// A kept render is handed out as copies a caller may change without
// changing the next one; the files (never changed once made) are shared,
// each in its place.
func TestKeptRenderResultsAreCopiesSharingTheFiles(t *testing.T) {
	kept := freeze(keptAnswer(1 << 10))
	first, err := kept.result()
	if err != nil {
		t.Fatal(err)
	}
	m := &first[0].Manifest
	m.Labels["tier"], m.Containers[0].Image, m.Containers[0].Build.Args["A"], m.Volumes[1].DockerVolume = "x", "x", "x", "x"
	m.Volumes[0].Files = nil
	second, err := kept.result()
	if err != nil {
		t.Fatal(err)
	}
	a, b := second[0].Manifest, second[1].Manifest
	if a.Labels["tier"] != "web" || a.Containers[0].Image != "web:1" || a.Containers[0].Build.Args["A"] != "1" || a.Volumes[1].DockerVolume != "data" {
		t.Errorf("a change to a result changed the next: %+v", a)
	}
	if a.Volumes[0].Files == nil || string(a.Volumes[0].Files.Items[0].Data) != "a" || string(b.Volumes[0].Files.Items[0].Data) != "b" {
		t.Errorf("files volumes out of place: a %+v, b %+v", a.Volumes[0].Files, b.Volumes[0].Files)
	}
	if a.Containers[0].Build.Files != b.Containers[0].Build.Files || a.Containers[0].Build.Files != first[0].Manifest.Containers[0].Build.Files {
		t.Error("the build context of both pods is not one value across results")
	}
	if a.Containers[0].Build.Files.Digest() != keptAnswer(1 << 10).Manifests[0].Manifest.Containers[0].Build.Files.Digest() {
		t.Error("the kept build context's digest changed")
	}
}

// BenchmarkKeptRenderResult is what a source's read of a project it
// rendered before costs past the helper: its pods copied out of the cache,
// with a build context of 10 MiB.
func BenchmarkKeptRenderResult(b *testing.B) {
	kept := freeze(keptAnswer(10 << 20))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kept.result(); err != nil {
			b.Fatal(err)
		}
	}
}
