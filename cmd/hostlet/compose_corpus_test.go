package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// TestComposeCorpus runs `hostlet validate` on every real-world Compose
// project of testdata/compose-corpus and compares the exit code and output
// with the project's want.txt: every key applied or refused by name.
func TestComposeCorpus(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "compose-corpus", "*", "compose.yaml"))
	if err != nil || len(dirs) < 10 {
		t.Fatalf("corpus: %d projects, %v; want at least 10", len(dirs), err)
	}
	cfg := writeFile(t, t.TempDir(), "hostlet.yaml", fmt.Sprintf("hostname: corpus\ncompose:\n  helper: %s\n  home: /home/corpus\n", composetest.Helper(t)))
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res := runCLI(t, "--config", cfg, "validate", dir)
			got := fmt.Sprintf("exit %d\n%s", res.code, res.stdout)
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("hostlet validate %s:\n%s\nwant (%s):\n%s", dir, got, wantFile, want)
			}
			if strings.Contains(got, "grafana\n") || strings.Contains(res.stderr, "panic") {
				t.Errorf("output shows a value or a panic:\n%s%s", got, res.stderr)
			}
		})
	}
}
