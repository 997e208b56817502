package buildctx_test

// Attacks on reading a build context (issue 15).

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// A .dockerignore is one file of the context, bounded only as any file
// (manifest.MaxSize, 10 MiB: hundreds of thousands of patterns), and
// every entry of the context is matched against every pattern, the
// ignored ones too (they are not counted against MaxFiles); Resolve takes
// no context and cannot be stopped. A context well inside every bound
// (1000 files, a 215 KiB .dockerignore of 10000 patterns) keeps a source
// read busy ~10 s, at every read of the source (polls, diff, validate);
// the time grows with patterns × entries (a 10 MiB .dockerignore: many
// minutes per read, per pod built from that context).
func TestAttackBuildDockerignoreCost(t *testing.T) {
	files := map[string]string{"Dockerfile": "FROM scratch\n"}
	var names []string
	for i := range 1000 {
		n := fmt.Sprintf("src/d%02d/file%04d.go", i%50, i)
		files[n] = "x"
	}
	var ign strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&ign, "**/nomatch%06d*.tmp\n", i)
	}
	ign.WriteString("!src/keep\n")
	files[".dockerignore"] = ign.String()
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	f := buildctx.NewListFolder(names, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
	c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "."}}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- buildctx.Resolve("slow", &c, ".", f) }()
	select {
	case err := <-done:
		t.Logf("resolved in %s: %v", time.Since(start), err)
		// The work is bounded by counts, not by a clock: a .dockerignore
		// past MaxIgnoreBytes or MaxIgnorePatterns is refused before any
		// entry is matched.
		if err == nil || !strings.Contains(err.Error(), ".dockerignore") || !strings.Contains(err.Error(), "over the limit") {
			t.Errorf("a context of %d files and a %d KiB .dockerignore (10001 patterns) was resolved (%v), not refused at its bounds", len(files), len(files[".dockerignore"])>>10, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("resolving a context of %d files and a %d KiB .dockerignore has not ended after 60s (and cannot be cancelled)", len(files), len(files[".dockerignore"])>>10)
	}
}
