package datafolder_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/sync/datafolder"
)

// TestEnsureMakesTheFolderInTheInstancesFolder: a data folder is made on
// first use (0755, as the engine makes a missing bind source), under the
// instance's folder, and a second Ensure finds it with what was written.
func TestEnsureMakesTheFolderInTheInstancesFolder(t *testing.T) {
	dir := t.TempDir()
	s := datafolder.New(dir, "inst")
	p, err := s.Ensure("shop/data/db")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "inst", "shop", "data", "db"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("%s: %v %v, want a folder 0755", p, fi, err)
	}
	if err := os.WriteFile(filepath.Join(p, "pg_version"), []byte("16"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Ensure("shop/data/db"); err != nil || again != p {
		t.Fatalf("again: %s %v", again, err)
	}
	if b, err := os.ReadFile(filepath.Join(p, "pg_version")); err != nil || string(b) != "16" {
		t.Errorf("kept file: %q %v", b, err)
	}
}

// TestEnsureRefusesALinkOnTheWay: a link anywhere below the instance's
// folder (one a container made in a parent data folder), or a file where
// a folder should be, is refused: the engine would follow a link out.
func TestEnsureRefusesALinkOnTheWay(t *testing.T) {
	dir := t.TempDir()
	s := datafolder.New(dir, "inst")
	if _, err := s.Ensure("shop/data"); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "inst", "shop", "data", "db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "inst", "shop", "root")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inst", "shop", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"shop/data/db", "shop/data/db/inner", "shop/root", "shop/root/etc", "shop/file", "../inst2/x", "/abs", "shop/./x", "."} {
		if p, err := s.Ensure(rel); err == nil {
			t.Errorf("Ensure(%q) = %s, want an error", rel, p)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was made through the link: %v", entries)
	}
}

// TestFoldersListsEachProjectsTopFolders: the listing names each
// project's top folders with the size of the files below, never
// following a link.
func TestFoldersListsEachProjectsTopFolders(t *testing.T) {
	dir := t.TempDir()
	s := datafolder.New(dir, "inst")
	if list, err := s.Folders(); err != nil || len(list) != 0 {
		t.Fatalf("no folder yet: %v %v", list, err)
	}
	for _, rel := range []string{"shop/data/db", "shop/logs", "blog/content"} {
		p, err := s.Ensure(rel)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte(strings.Repeat("x", len(rel))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr", filepath.Join(dir, "inst", "shop", "logs", "usr")); err != nil {
		t.Fatal(err)
	}
	list, err := s.Folders()
	if err != nil {
		t.Fatal(err)
	}
	want := []datafolder.Folder{
		{Name: "blog/content", Path: filepath.Join(dir, "inst", "blog", "content"), SizeBytes: 12},
		{Name: "shop/data", Path: filepath.Join(dir, "inst", "shop", "data"), SizeBytes: 12},
		{Name: "shop/logs", Path: filepath.Join(dir, "inst", "shop", "logs"), SizeBytes: 9},
	}
	if len(list) != len(want) {
		t.Fatalf("folders %+v, want %+v", list, want)
	}
	for i := range want {
		if list[i] != want[i] {
			t.Errorf("folder %d: %+v, want %+v", i, list[i], want[i])
		}
	}
}

// TestRemoveLeavesAFolderInUse: Remove takes a listed name only, leaves a
// folder a container mounts anything of (naming it), and removes an unused
// one with everything in it, never through a link.
func TestRemoveLeavesAFolderInUse(t *testing.T) {
	dir := t.TempDir()
	s := datafolder.New(dir, "inst")
	p, err := s.Ensure("shop/data/db")
	if err != nil {
		t.Fatal(err)
	}
	none := func(string) []string { return nil }
	inUse := func(string) []string { return []string{"shop-db"} }
	if err := s.Remove("shop/data", inUse); err == nil || !strings.Contains(err.Error(), "used by shop-db") {
		t.Errorf("in use: %v", err)
	}
	for _, bad := range []string{"shop", "shop/data/db", "../x/y", "/shop/data", "shop/..", "shop/missing"} {
		if err := s.Remove(bad, none); err == nil {
			t.Errorf("Remove(%q) removed something", bad)
		}
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "inst", "shop", "link")); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("shop/link", none); !errors.Is(err, datafolder.ErrLink) {
		t.Errorf("a link: %v, want ErrLink", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target: %v", err)
	}
	if err := s.Remove("shop/data", none); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("shop/data after Remove: %v", err)
	}
}

// FuzzEnsure: whatever path a manifest gives, Ensure makes nothing
// outside the instance's folder, and a path it returns lies inside it.
func FuzzEnsure(f *testing.F) {
	for _, s := range []string{"shop/data", "../x", "/etc", "a/../../b", ".", "", "a//b", "a/./b", "a\x00b", strings.Repeat("a/", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		dir := t.TempDir()
		root := filepath.Join(dir, "data")
		s := datafolder.New(root, "inst")
		p, err := s.Ensure(rel)
		if err == nil && !strings.HasPrefix(p, s.Root()+string(filepath.Separator)) {
			t.Errorf("Ensure(%q) = %s, outside %s", rel, p, s.Root())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) > 1 {
			t.Errorf("Ensure(%q) made %v beside the data folder", rel, entries)
		}
	})
}

// A data folder is never made inside another one made before, nor around
// one: a container mounting the outer folder could swap a folder of the
// inner one's path for a link. Siblings under one project are fine, and
// once the outer folder is removed the inner one may be made.
func TestADataFolderIsNeverMadeInsideAnother(t *testing.T) {
	s := datafolder.New(t.TempDir(), "inst")
	for _, step := range []struct {
		rel  string
		want error
	}{
		{"proj/a", nil},
		{"proj/a", nil},                        // again: the same folder
		{"proj/b", nil},                        // a sibling
		{"proj/a/b/etc", datafolder.ErrNested}, // inside proj/a
		{"proj/c/d", nil},                      // a deeper sibling
		{"proj/c", datafolder.ErrNested},       // around proj/c/d
		{"other/a/b", nil},                     // another project
	} {
		_, err := s.Ensure(step.rel)
		if !errors.Is(err, step.want) {
			t.Errorf("Ensure(%s) = %v, want %v", step.rel, err, step.want)
		}
	}
	if err := s.Remove("proj/a", func(string) []string { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ensure("proj/a/b/etc"); err != nil {
		t.Errorf("after proj/a was removed, Ensure(proj/a/b/etc) = %v", err)
	}
	folders, err := s.Folders()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range folders {
		if strings.Contains(f.Name, ".hostlet") {
			t.Errorf("the index is listed as a data folder: %+v", f)
		}
	}
}
