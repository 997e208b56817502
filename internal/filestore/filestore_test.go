package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func single(data string) *manifest.Files {
	return manifest.NewFiles("conf/app.conf", false, []manifest.FileItem{{Data: []byte(data)}})
}

func folder() *manifest.Files {
	return manifest.NewFiles("site", false, []manifest.FileItem{
		{Path: "index.html", Data: []byte("<h1>hi</h1>")},
		{Path: "bin/deep/run", Data: []byte("#!/bin/sh\n"), Mode: 0o755},
	})
}

func TestMaterialise(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		files *manifest.Files
		want  map[string]struct {
			data string
			mode os.FileMode
		}
	}{
		{name: "single file", files: single("listen 80\n"), want: map[string]struct {
			data string
			mode os.FileMode
		}{"": {"listen 80\n", 0o444}}},
		{name: "folder", files: folder(), want: map[string]struct {
			data string
			mode os.FileMode
		}{"index.html": {"<h1>hi</h1>", 0o444}, "bin/deep/run": {"#!/bin/sh\n", 0o555}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(filepath.Join(t.TempDir(), "files"))
			got, err := s.Materialise(ctx, tt.files.Digest(), tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if got != filepath.Join(s.Dir(), tt.files.Digest()) {
				t.Errorf("path %s, want the digest's", got)
			}
			for rel, w := range tt.want {
				p := filepath.Join(got, rel)
				data, err := os.ReadFile(p)
				if err != nil || string(data) != w.data {
					t.Errorf("%s: %q, %v; want %q", rel, data, err, w.data)
				}
				fi, _ := os.Stat(p)
				if fi.Mode().Perm() != w.mode {
					t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), w.mode)
				}
			}
			if !tt.files.Single() {
				for _, d := range []string{"", "bin", "bin/deep"} {
					if fi, _ := os.Stat(filepath.Join(got, d)); fi.Mode().Perm() != 0o555 {
						t.Errorf("folder %q: mode %v, want r-x", d, fi.Mode().Perm())
					}
				}
			}
			// Once written, never again: the same path, the same file.
			before, _ := os.Stat(got)
			again, err := s.Materialise(ctx, tt.files.Digest(), tt.files)
			if err != nil || again != got {
				t.Fatalf("again: %s, %v", again, err)
			}
			after, _ := os.Stat(got)
			if !os.SameFile(before, after) {
				t.Error("written again")
			}
		})
	}
}

// A write that fails (a full disk) returns the error and leaves nothing
// that looks like a copy; the next Prune removes the temporary too.
func TestMaterialiseFailedWriteLeavesNothing(t *testing.T) {
	for _, f := range []*manifest.Files{single("x"), folder()} {
		s := New(filepath.Join(t.TempDir(), "files"))
		calls := 0
		s.write = func(fh *os.File, data []byte) error {
			calls++
			if calls == len(f.Items) {
				return syscall.ENOSPC
			}
			return writeAll(fh, data)
		}
		if _, err := s.Materialise(context.Background(), f.Digest(), f); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: error %v, want ENOSPC", f.Source, err)
		}
		entries, _ := os.ReadDir(s.Dir())
		for _, e := range entries {
			t.Errorf("%s: left %s", f.Source, e.Name())
		}
		s.write = writeAll
		if _, err := s.Materialise(context.Background(), f.Digest(), f); err != nil {
			t.Fatalf("%s: once the disk has room: %v", f.Source, err)
		}
	}
}

func TestMaterialiseRefusesPathsOutsideTheFolder(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "files"))
	for _, p := range []string{"../escape", "/etc/passwd", "a/../../b"} {
		f := manifest.NewFiles("x", false, []manifest.FileItem{{Path: "ok", Data: []byte("a")}, {Path: p, Data: []byte("b")}})
		if _, err := s.Materialise(context.Background(), f.Digest(), f); err == nil {
			t.Errorf("%q: written", p)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(s.Dir()), "escape")); err == nil {
		t.Error("a file was written outside the store")
	}
}

func TestMaterialiseRefusesSomethingElseUnderItsName(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "files"))
	f := folder()
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), f.Digest()), []byte("a file, not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Materialise(context.Background(), f.Digest(), f); err == nil {
		t.Error("a file was taken for the folder")
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	s := New(filepath.Join(t.TempDir(), "files"))
	keep, gone := single("keep"), folder()
	for _, f := range []*manifest.Files{keep, gone} {
		if _, err := s.Materialise(ctx, f.Digest(), f); err != nil {
			t.Fatal(err)
		}
	}
	leftover := filepath.Join(s.Dir(), tmpPrefix+"crashed")
	if err := os.MkdirAll(filepath.Join(leftover, "sub"), 0o555); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(s.Dir(), "not-hostlets")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := s.Prune(ctx, map[string]bool{keep.Digest(): true})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != gone.Digest() {
		t.Errorf("removed %v, want [%s]", removed, gone.Digest())
	}
	got, _ := s.Names()
	if len(got) != 1 || got[0] != keep.Digest() {
		t.Errorf("left %v, want [%s]", got, keep.Digest())
	}
	if _, err := os.Stat(leftover); err == nil {
		t.Error("the temporary of a crashed write is still there")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("a file that is not the store's was removed")
	}
}

func TestPruneOfNoStore(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "never-made"))
	if removed, err := s.Prune(context.Background(), nil); err != nil || len(removed) != 0 {
		t.Errorf("%v, %v", removed, err)
	}
}

// A name that is not 64 lower-case hex digits is refused before anything
// is written: no path of the caller's reaches the folder.
func TestMaterialiseRefusesOtherNames(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "files"))
	f := single("x")
	for _, name := range []string{"", "../x", strings.Repeat("A", 64), f.Digest()[:63], f.Digest() + "/x"} {
		if _, err := s.Materialise(context.Background(), name, f); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if entries, _ := os.ReadDir(s.Dir()); len(entries) != 0 {
		t.Errorf("%d entries written", len(entries))
	}
}
