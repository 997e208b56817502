package tree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hostlet/hostlet/manifest"
)

func pod(id string) *fstest.MapFile {
	return &fstest.MapFile{Data: fmt.Appendf(nil, "version: v1beta1\nid: %s\ncontainers: [{name: app, image: example.org/%s:1}]\n", id, id)}
}

// List finds what both trees' readers always found: manifests by their
// ending in any case, hidden entries skipped, a folder with a Compose file
// (not a folder named like one) a project with nothing below it listed,
// sorted by path.
func TestListFindsManifestsAndProjects(t *testing.T) {
	fsys := fstest.MapFS{
		"hosts/web/a.yaml":                    pod("a"),
		"hosts/web/B.YML":                     pod("b"),
		"hosts/web/c.json":                    {Data: []byte(`{}`)},
		"hosts/web/notes.txt":                 {Data: []byte("no")},
		"hosts/web/.hidden.yaml":              pod("h"),
		"hosts/web/.git/x.yaml":               pod("x"),
		"hosts/web/sub/d.yaml":                pod("d"),
		"hosts/web/shop/compose.yaml":         {Data: []byte("services: {}\n")},
		"hosts/web/shop/data.yaml":            pod("no"),
		"hosts/web/shop/inner/compose.yaml":   {Data: []byte("services: {}\n")},
		"hosts/web/odd/compose.yaml/e.yaml":   pod("e"),
		"hosts/web/.hid/proj/compose.yaml":    {Data: []byte("services: {}\n")},
		"hosts/other/f.yaml":                  pod("f"),
		"hosts/web/zz/docker-compose.yml":     {Data: []byte("services: {}\n")},
		"hosts/web/zz/not-listed/g.yaml":      pod("g"),
		"hosts/web/sub/deeper/further/h.yaml": pod("h"),
	}
	got, err := List(fsys, "hosts/web")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Path: "hosts/web/B.YML", Size: int64(len(fsys["hosts/web/B.YML"].Data))},
		{Path: "hosts/web/a.yaml", Size: int64(len(fsys["hosts/web/a.yaml"].Data))},
		{Path: "hosts/web/c.json", Size: 2},
		{Path: "hosts/web/odd/compose.yaml/e.yaml", Size: int64(len(fsys["hosts/web/odd/compose.yaml/e.yaml"].Data))},
		{Path: "hosts/web/shop", Project: true},
		{Path: "hosts/web/sub/d.yaml", Size: int64(len(fsys["hosts/web/sub/d.yaml"].Data))},
		{Path: "hosts/web/sub/deeper/further/h.yaml", Size: int64(len(fsys["hosts/web/sub/deeper/further/h.yaml"].Data))},
		{Path: "hosts/web/zz", Project: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n%+v\nwant:\n%+v", got, want)
	}
	if got, err := List(fsys, "hosts/web/shop"); err != nil || !reflect.DeepEqual(got, []Entry{{Path: "hosts/web/shop", Project: true}}) {
		t.Errorf("List of a project's folder: %+v, %v; want the project alone", got, err)
	}
}

// full is a tree of files of manifest.MaxFileManifests manifests each.
func full(files int) (fstest.MapFS, []Entry) {
	fsys := fstest.MapFS{}
	var entries []Entry
	for i := range files {
		var b strings.Builder
		for j := range manifest.MaxFileManifests {
			fmt.Fprintf(&b, "- {version: v1beta1, id: p%d-%d}\n", i, j)
		}
		name := fmt.Sprintf("%02d.yaml", i)
		fsys[name] = &fstest.MapFile{Data: []byte(b.String())}
		entries = append(entries, Entry{Path: name})
	}
	return fsys, entries
}

// The bound on manifests per source stops the read at the file past it;
// the error names the file whose manifests crossed the bound (the
// folder's) or the first file not read (the commit's).
func TestReaderStopsPastTheBound(t *testing.T) {
	fsys, entries := full(manifest.MaxSourceManifests/manifest.MaxFileManifests + 2)
	for _, tt := range []struct {
		next bool
		want string
	}{
		{false, "s:05.yaml: more than 5000 manifests"},
		{true, "s:06.yaml: more than 5000 manifests"},
	} {
		rd := NewReader(Options{Source: "s", BoundNamesNext: tt.next})
		if err := rd.Read(context.Background(), Root{FS: fsys, Entries: entries}); err != nil {
			t.Fatal(err)
		}
		snap, err := rd.Result(context.Background())
		if !rd.Full() || !errors.Is(err, manifest.ErrTooManyManifests) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("BoundNamesNext %v: full %v, error %v; want one containing %q", tt.next, rd.Full(), err, tt.want)
		}
		if snap.Files != 6 || len(snap.Manifests) != 6000 {
			t.Errorf("BoundNamesNext %v: read %d files, %d manifests; want 6 and 6000", tt.next, snap.Files, len(snap.Manifests))
		}
	}
}

// errDamaged stands for a git object that cannot be read.
var errDamaged = errors.New("damaged")

type damagedFS struct{ fstest.MapFS }

func (d damagedFS) Open(name string) (fs.File, error) {
	if name == "b.yaml" {
		return nil, errDamaged
	}
	return d.MapFS.Open(name)
}

// An error Options.Fatal reports voids the read; any other error of a
// file is the file's, named by its origin, and the read goes on.
func TestReaderFatalErrorVoidsTheRead(t *testing.T) {
	fsys := damagedFS{fstest.MapFS{"a.yaml": pod("a"), "b.yaml": pod("b"), "c.yaml": pod("c")}}
	entries := []Entry{{Path: "a.yaml"}, {Path: "b.yaml"}, {Path: "c.yaml"}}
	rd := NewReader(Options{Source: "s", Fatal: func(err error) bool { return errors.Is(err, errDamaged) }})
	if err := rd.Read(context.Background(), Root{FS: fsys, Entries: entries}); !errors.Is(err, errDamaged) {
		t.Fatalf("Read: %v, want the fatal error", err)
	}
	rd = NewReader(Options{Source: "s"})
	if err := rd.Read(context.Background(), Root{FS: fsys, Entries: entries}); err != nil {
		t.Fatalf("Read: %v, want no fatal error", err)
	}
	snap, err := rd.Result(context.Background())
	if err == nil || !strings.Contains(err.Error(), "s:b.yaml: damaged") || len(snap.Manifests) != 2 || snap.Files != 2 {
		t.Errorf("read %d files, %d manifests, error %v; want a and c read and b's error", snap.Files, len(snap.Manifests), err)
	}
}

// The revision is a hash of what was read, by name: the same content
// named alike gives the same revision, a changed byte or name another.
func TestReaderRevisionFollowsContent(t *testing.T) {
	rev := func(fsys fstest.MapFS, name func(string) string) string {
		t.Helper()
		rd := NewReader(Options{Source: "s"})
		if err := rd.Read(context.Background(), Root{FS: fsys, Entries: []Entry{{Path: "a.yaml"}, {Path: "b.yaml"}}, Name: name}); err != nil {
			t.Fatal(err)
		}
		snap, err := rd.Result(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return snap.Revision
	}
	one := rev(fstest.MapFS{"a.yaml": pod("a"), "b.yaml": pod("b")}, nil)
	if again := rev(fstest.MapFS{"a.yaml": pod("a"), "b.yaml": pod("b")}, nil); again != one {
		t.Errorf("same content: revision %s, then %s", one, again)
	}
	if other := rev(fstest.MapFS{"a.yaml": pod("a"), "b.yaml": pod("c")}, nil); other == one {
		t.Errorf("changed content: revision %s unchanged", one)
	}
	if other := rev(fstest.MapFS{"a.yaml": pod("a"), "b.yaml": pod("b")}, func(p string) string { return "x/" + p }); other == one {
		t.Errorf("renamed files: revision %s unchanged", one)
	}
}
