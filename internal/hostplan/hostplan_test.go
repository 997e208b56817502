package hostplan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

func podYAML(id, image string) string {
	return "version: v1beta1\nid: " + id + "\ncontainers:\n  - name: app\n    image: " + image + "\n"
}

// readDir writes files into a fresh folder and reads it as one source.
func readDir(t *testing.T, files map[string]string) Read {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ReadPath(t.Context(), dir, nil)
}

func ids(pods []hsync.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Manifest.ID)
	}
	slices.Sort(out)
	return out
}

// TestParseAgainst: --against is live, status or ref:REV, nothing else.
func TestParseAgainst(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Against
		err  bool
	}{
		{in: "live", want: Against{Mode: AgainstLive}},
		{in: "status", want: Against{Mode: AgainstStatus}},
		{in: "ref:main", want: Against{Mode: AgainstRef, Rev: "main"}},
		{in: "ref:", err: true},
		{in: "ref", err: true},
		{in: "Live", err: true},
	} {
		got, err := ParseAgainst(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseAgainst(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestValidateReportsEveryError: the report holds every source, the
// manifests accepted, and every error (an invalid manifest, an ID given
// by two sources: the later one rejected), not the first; Desired makes
// the accepted pods only.
func TestValidateReportsEveryError(t *testing.T) {
	a := readDir(t, map[string]string{"web.yaml": podYAML("web", "example.org/web:1"), "bad.yaml": podYAML("bad", "")})
	b := readDir(t, map[string]string{"web.yaml": podYAML("web", "example.org/web:2"), "db.yaml": podYAML("db", "example.org/db:1")})
	rep := Validate([]Read{a, b}, validate.Options{})
	if rep.Valid || len(rep.Sources) != 2 || len(rep.Errors) != 2 || len(rep.Rejected) != 2 {
		t.Fatalf("report: valid %v, %d sources, %d errors, %d rejected; want false, 2, 2, 2: %+v", rep.Valid, len(rep.Sources), len(rep.Errors), len(rep.Rejected), rep)
	}
	var accepted []string
	for _, m := range rep.Accepted {
		accepted = append(accepted, m.ID)
	}
	if slices.Sort(accepted); !slices.Equal(accepted, []string{"db", "web"}) {
		t.Errorf("accepted %v, want db, web", accepted)
	}
	if got := ids(Desired([]Read{a, b}, validate.Options{})); !slices.Equal(got, []string{"db", "web"}) {
		t.Errorf("Desired = %v, want db, web", got)
	}
}

// TestMergeLikeRunKeepsWhatRuns: as the running hostlet merges, a source
// that cannot be read keeps what runs of it (the pods stay as they run,
// out of the plan), and a push source's set is what runs; a source read
// well replaces its pods.
func TestMergeLikeRunKeepsWhatRuns(t *testing.T) {
	good := readDir(t, map[string]string{"web.yaml": podYAML("web", "example.org/web:2")})
	broken := readDir(t, map[string]string{"db.yaml": podYAML("db", "example.org/db:1")})
	pushed := readDir(t, map[string]string{"cache.yaml": podYAML("cache", "example.org/cache:1")})
	// What runs: each source's pods as they were applied.
	running := Desired([]Read{good, broken, pushed}, validate.Options{})
	actual := hsync.Simulate("test", running, hsync.RandomEnvHasher())

	broken.Manifests, broken.Err = nil, errors.New("unreachable")
	pushed.Manifests, pushed.Pushed = nil, true
	m := MergeLikeRun([]Read{good, broken, pushed}, actual, false, validate.Options{})
	if got := ids(m.Pods); !slices.Equal(got, []string{"web"}) {
		t.Errorf("pods to run: %v, want web", got)
	}
	if !m.Stay["db"] || !m.Stay["cache"] || m.Stay["web"] {
		t.Errorf("stay %v, want db and cache only", m.Stay)
	}
	if len(m.Rejected) != 0 {
		t.Errorf("rejected %v, want none", m.Rejected)
	}
}
