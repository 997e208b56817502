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
