package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// WriteFile writes data to path (0644), making its folders first, and
// fails the test on error.
func WriteFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Damage is one way a state file gets damaged.
type Damage struct {
	Name string
	Do   func(t testing.TB, path string)
}

// Damages are the ways a crash, a bad disk or an operator damage a file
// that hostlet wrote: cut short, emptied, replaced by garbage, made
// unreadable (a folder in its place: the tests run as root, whom file
// modes do not stop), replaced by a link to itself. Each Do damages the
// file at path, which must exist.
func Damages() []Damage {
	return []Damage{
		{Name: "truncated", Do: func(t testing.TB, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			WriteFile(t, path, string(b[:len(b)/2]))
		}},
		{Name: "empty", Do: func(t testing.TB, path string) { WriteFile(t, path, "") }},
		{Name: "garbage", Do: func(t testing.TB, path string) { WriteFile(t, path, "\x00\x17garbage{]\n") }},
		{Name: "unreadable", Do: func(t testing.TB, path string) {
			replace(t, path, func() error { return os.Mkdir(path, 0o700) })
		}},
		{Name: "symlink loop", Do: func(t testing.TB, path string) {
			replace(t, path, func() error { return os.Symlink(filepath.Base(path), path) })
		}},
	}
}

// replace removes path and puts what put makes in its place.
func replace(t testing.TB, path string, put func() error) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := put(); err != nil {
		t.Fatal(err)
	}
}

// Corpus returns the contents of every regular file below the given
// folders (a fuzz target's seeds), and fails when there are fewer than min.
func Corpus(t testing.TB, min int, dirs ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < min {
		t.Fatalf("only %d seed files in %v, want at least %d", len(out), dirs, min)
	}
	return out
}

// GoldenLines compares got with the lines of the golden file path, naming
// every line that differs, or with update rewrites the file from got. why
// says what a difference means.
func GoldenLines(t testing.TB, path string, got []string, update bool, why string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if slices.Equal(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s line %d:\n got %s\nwant %s", path, i+1, g, w)
		}
	}
	t.Error(why)
}
