package compose_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/hashes.txt (never for a released hash version)")

// dirFiles is a project folder of testdata.
type dirFiles string

func (d dirFiles) ReadFile(name string) ([]byte, error) {
	p := filepath.Join(string(d), filepath.FromSlash(name))
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		// A folder is not a file of the project, as in a bundle.
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return os.ReadFile(p)
}

func (d dirFiles) Names() []string {
	var out []string
	_ = filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(string(d), p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func (d dirFiles) Executable(name string) bool {
	fi, err := os.Stat(filepath.Join(string(d), filepath.FromSlash(name)))
	return err == nil && fi.Mode()&0o111 != 0
}

// TestHashGolden pins the spec hashes of the pods of the golden projects.
func TestHashGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "compose.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("golden projects: %v, %v", dirs, err)
	}
	var got []string
	for _, f := range dirs {
		dir := filepath.Dir(f)
		name := filepath.Base(dir)
		pods, err := compose.Load(context.Background(), dirFiles(dir), compose.Options{Source: "golden", Dir: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range pods {
			if len(p.Errors) > 0 {
				t.Fatalf("%s: pod %s: %v", name, p.Manifest.ID, p.Errors)
			}
			got = append(got, fmt.Sprintf("%s %s POD %s", name, p.Manifest.ID, manifest.InfraHash(p.Manifest)))
			for i, c := range p.Manifest.Containers {
				got = append(got, fmt.Sprintf("%s %s %s %s", name, p.Manifest.ID, c.Name, manifest.ContainerHash(p.Manifest, i)))
			}
		}
	}
	testkit.GoldenLines(t, filepath.Join("testdata", "golden", "hashes.txt"), got, *update,
		"the spec hash of a Compose-derived pod changed: a hostlet with this change would recreate it")
}
