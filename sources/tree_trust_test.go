package sources

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
)

// secretLine is what a root-only file outside the source holds. Each form
// leaked before the fix: the key as a field path of a decode error, the
// image as the accepted manifest.
const secretLine = "sk_live_4f9Qz7TOPSECRET"

// TestFileSourceRefusesLinksOutsideRoot (issue 12, finding 2): a link in
// the source folder to a file outside it must not be read. The error names
// the link, the secret appears in no error, no state and no file under
// stateDir. Links that stay inside the root keep working, whether relative,
// absolute, or below a source path that is itself a symlinked folder.
func TestFileSourceRefusesLinksOutsideRoot(t *testing.T) {
	secretFiles := map[string]string{
		"key":      secretLine + ": 1\n",
		"manifest": "version: v1beta1\nid: leak\ncontainers:\n  - name: app\n    image: example.org/" + strings.ToLower(secretLine) + ":1\n",
	}
	tests := []struct {
		name string
		// setup builds the tree under dir and returns the source path.
		setup   func(t *testing.T, dir, outside string) string
		wantErr string // "" for a good read
		want    []string
	}{
		{
			name: "relative link to a file outside",
			setup: func(t *testing.T, dir, outside string) string {
				root := filepath.Join(dir, "src")
				testkit.WriteFile(t, filepath.Join(root, "web.yaml"), podYAML("web", "1"))
				symlink(t, filepath.Join("..", "..", filepath.Base(outside), "secret.yaml"), filepath.Join(root, "stolen.yaml"))
				return root
			},
			wantErr: "stolen.yaml: resolves outside the source root",
		},
		{
			name: "absolute link to a file outside, in a subfolder",
			setup: func(t *testing.T, dir, outside string) string {
				root := filepath.Join(dir, "src")
				testkit.WriteFile(t, filepath.Join(root, "web.yaml"), podYAML("web", "1"))
				symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(root, "sub", "stolen.yaml"))
				return root
			},
			wantErr: "sub/stolen.yaml: resolves outside the source root",
		},
		{
			name: "chain of links ending outside",
			setup: func(t *testing.T, dir, outside string) string {
				root := filepath.Join(dir, "src")
				testkit.WriteFile(t, filepath.Join(root, "web.yaml"), podYAML("web", "1"))
				symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(root, ".hidden-hop"))
				symlink(t, ".hidden-hop", filepath.Join(root, "stolen.yaml"))
				return root
			},
			wantErr: "stolen.yaml: resolves outside the source root",
		},
		{
			name: "symlinked source folder with a link out of its target",
			setup: func(t *testing.T, dir, outside string) string {
				testkit.WriteFile(t, filepath.Join(dir, "release-1", "web.yaml"), podYAML("web", "1"))
				// Outside the resolved root release-1, though inside dir.
				testkit.WriteFile(t, filepath.Join(dir, "other", "api.yaml"), podYAML("api", "1"))
				symlink(t, filepath.Join("..", "other", "api.yaml"), filepath.Join(dir, "release-1", "api.yaml"))
				symlink(t, "release-1", filepath.Join(dir, "current"))
				return filepath.Join(dir, "current")
			},
			wantErr: "api.yaml: resolves outside the source root",
		},
		{
			name: "links inside the root keep working",
			setup: func(t *testing.T, dir, outside string) string {
				root := filepath.Join(dir, "src")
				testkit.WriteFile(t, filepath.Join(root, "shared", "web.yaml.txt"), podYAML("web", "1"))
				testkit.WriteFile(t, filepath.Join(root, "shared", "api.yaml.txt"), podYAML("api", "1"))
				symlink(t, filepath.Join("shared", "web.yaml.txt"), filepath.Join(root, "web.yaml"))
				symlink(t, filepath.Join(root, "shared", "api.yaml.txt"), filepath.Join(root, "api.yaml"))
				return root
			},
			want: []string{"api=1", "web=1"},
		},
		{
			name: "symlinked source folder with links inside its target",
			setup: func(t *testing.T, dir, outside string) string {
				testkit.WriteFile(t, filepath.Join(dir, "release-1", "pods", "web.yaml.txt"), podYAML("web", "1"))
				symlink(t, filepath.Join("pods", "web.yaml.txt"), filepath.Join(dir, "release-1", "web.yaml"))
				testkit.WriteFile(t, filepath.Join(dir, "release-1", "api.yaml.txt"), podYAML("api", "1"))
				symlink(t, filepath.Join(dir, "current", "api.yaml.txt"), filepath.Join(dir, "release-1", "api.yaml"))
				symlink(t, "release-1", filepath.Join(dir, "current"))
				return filepath.Join(dir, "current")
			},
			want: []string{"api=1", "web=1"},
		},
	}
	for _, tt := range tests {
		for form, secret := range secretFiles {
			t.Run(tt.name+"/"+form, func(t *testing.T) {
				dir, outside, stateDir := t.TempDir(), t.TempDir(), t.TempDir()
				testkit.WriteFile(t, filepath.Join(outside, "secret.yaml"), secret)
				if err := os.Chmod(filepath.Join(outside, "secret.yaml"), 0o600); err != nil {
					t.Fatal(err)
				}
				root := tt.setup(t, dir, outside)

				res, err := ReadTree(context.Background(), "", []string{root}, "local", nil)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("ReadTree error = %v, want one containing %q", err, tt.wantErr)
					}
				} else if err != nil && strings.Contains(err.Error(), "outside the source root") {
					t.Fatalf("ReadTree error = %v, want no refusal of a link inside the root", err)
				}
				if tt.want != nil {
					got := manifestIDs(res)
					if strings.Join(got, ",") != strings.Join(tt.want, ",") {
						t.Errorf("read %v, want %v", got, tt.want)
					}
				}
				assertNoSecret(t, "ReadTree result", res)
				if err != nil {
					assertNoSecret(t, "ReadTree error", err.Error())
				}

				h := startSources(t, MergeOptions{AllowEmpty: true, StateDir: stateDir}, fileSource(t, "local", root))
				if tt.wantErr != "" {
					h.waitErr(t, 5*time.Second, 0, tt.wantErr)
				} else {
					testkit.WaitFor(t, 5*time.Second, func() (bool, string) {
						_, n := h.lastUpdate()
						return n > 0, "no update yet"
					})
				}
				st := h.m.State()
				assertNoSecret(t, "merged state", st)
				for _, s := range st.Sources {
					assertNoSecret(t, "source status error", s.Error)
				}
				u, _ := h.lastUpdate()
				assertNoSecret(t, "last update", u.Manifests)
				if u.Err != nil {
					assertNoSecret(t, "last update error", u.Err.Error())
				}
				assertNoSecretInDir(t, stateDir)
			})
		}
	}
}

// manifestIDs lists the ids read, with label v, in order.
func manifestIDs(res manifest.Snapshot) []string {
	var out []string
	for _, s := range res.Manifests {
		out = append(out, s.Manifest.ID+"="+s.Manifest.Labels["v"])
	}
	return out
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// assertNoSecret fails when v, as text or JSON, holds the secret in any case.
func assertNoSecret(t *testing.T, what string, v any) {
	t.Helper()
	text, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		text = string(b)
	}
	if strings.Contains(strings.ToLower(text), "topsecret") {
		t.Errorf("%s holds the secret read through a link: %.300s", what, text)
	}
}

func assertNoSecretInDir(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assertNoSecret(t, p, string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
