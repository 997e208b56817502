package compose_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/hashes.txt (never for a released hash version)")

// dirFiles is a project folder of testdata.
type dirFiles string

func (d dirFiles) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(name)))
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
