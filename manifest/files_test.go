package manifest_test

import (
	"encoding/json"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func TestFilesDigest(t *testing.T) {
	items := func() []manifest.FileItem {
		return []manifest.FileItem{{Path: "a.conf", Data: []byte("a")}, {Path: "b/run", Data: []byte("#!/bin/sh"), Mode: 0o555}}
	}
	base := manifest.NewFiles("conf", false, items()).Digest()
	tests := []struct {
		name   string
		change func(f *manifest.Files)
		same   bool
	}{
		{name: "source renamed", change: func(f *manifest.Files) { f.Source = "etc" }, same: true},
		{name: "marked secret", change: func(f *manifest.Files) { f.Secret = true }, same: true},
		{name: "items reordered", change: func(f *manifest.Files) { f.Items[0], f.Items[1] = f.Items[1], f.Items[0] }, same: true},
		{name: "write bits given", change: func(f *manifest.Files) { f.Items[1].Mode = 0o755 }, same: true},
		{name: "default mode written out", change: func(f *manifest.Files) { f.Items[0].Mode = manifest.FileMode }, same: true},
		{name: "content", change: func(f *manifest.Files) { f.Items[0].Data = []byte("b") }},
		{name: "content moved between files", change: func(f *manifest.Files) {
			f.Items[0].Data, f.Items[1].Data = []byte("a#"), []byte("!/bin/sh")
		}},
		{name: "path", change: func(f *manifest.Files) { f.Items[0].Path = "c.conf" }},
		{name: "mode", change: func(f *manifest.Files) { f.Items[1].Mode = 0o444 }},
		{name: "file added", change: func(f *manifest.Files) {
			f.Items = append(f.Items, manifest.FileItem{Path: "empty"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &manifest.Files{Source: "conf", Items: items()}
			tt.change(f)
			if got := manifest.NewFiles(f.Source, f.Secret, f.Items).Digest(); (got == base) != tt.same {
				t.Errorf("digest %s, base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

func TestFilesDigestSurvivesJSON(t *testing.T) {
	f := manifest.NewFiles("conf/app.conf", false, []manifest.FileItem{{Data: []byte("listen 80\n")}})
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back manifest.Files
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Digest() != f.Digest() || !back.Single() {
		t.Errorf("decoded digest %s single %v, want %s single", back.Digest(), back.Single(), f.Digest())
	}
}

// A changed file changes the hash of the container that mounts it, and
// only its hash.
func TestHashFilesContent(t *testing.T) {
	m := decodeOne(t, `
version: v1beta1
id: web
volumes:
  - {name: conf, files: {source: conf/app.conf, items: [{data: bGlzdGVuIDgwCg==}]}}
containers:
  - name: app
    image: nginx
    volumeMounts: [{name: conf, mountPath: /etc/app.conf, readOnly: true}]
  - name: side
    image: nginx
`)
	before := hashes(m)
	changed := m.Clone()
	changed.Volumes[0].Files = manifest.NewFiles("conf/app.conf", false, []manifest.FileItem{{Data: []byte("listen 81\n")}})
	after := hashes(changed)
	// hashes: infra, app, side.
	if after[1] == before[1] {
		t.Error("container app's hash did not change with its file")
	}
	if after[0] != before[0] || after[2] != before[2] {
		t.Errorf("hashes of what does not mount the file changed: infra %s -> %s, side %s -> %s", before[0], after[0], before[2], after[2])
	}
}
