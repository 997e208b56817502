package sources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
)

// fileSource returns a file source whose polling backstop is an hour away,
// so that only fsnotify can explain a change seen within a second.
func fileSource(t *testing.T, name string, paths ...string) *File {
	return NewFile(config.Source{Name: name, Type: config.TypeFile, Paths: paths, Interval: time.Hour}, testLogger(t))
}

func TestFileDeliversSetAndRevision(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		paths []string // relative to the temp dir
		want  []string
	}{
		{
			name:  "one file holding a list",
			files: map[string]string{"pods.yaml": podListYAML("1", "b", "a")},
			paths: []string{"pods.yaml"},
			want:  []string{"b=1", "a=1"},
		},
		{
			name: "folder tree sorted by path, hidden and other files skipped",
			files: map[string]string{
				"d/z.yaml":        podYAML("z", "1"),
				"d/a/c.yml":       podYAML("c", "1"),
				"d/a/b.json":      `{"version": "v1beta1", "id": "j", "labels": {"v": "1"}, "containers": [{"name": "app", "image": "example.org/app:1"}]}`,
				"d/.hidden.yaml":  podYAML("hidden", "1"),
				"d/.git/x.yaml":   podYAML("git", "1"),
				"d/README.md":     "not a manifest",
				"d/m.yaml":        podYAML("m1", "1") + "---\n" + podYAML("m2", "1"),
				"d/notes.yaml.bk": podYAML("bk", "1"),
			},
			paths: []string{"d"},
			want:  []string{"j=1", "c=1", "m1=1", "m2=1", "z=1"},
		},
		{
			name: "paths read in the order listed",
			files: map[string]string{
				"common/a.yaml": podYAML("shared", "1"),
				"host/a.yaml":   podYAML("own", "1"),
			},
			paths: []string{"host", "common"},
			want:  []string{"own=1", "shared=1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, data := range tt.files {
				testkit.WriteFile(t, filepath.Join(dir, p), data)
			}
			var paths []string
			for _, p := range tt.paths {
				paths = append(paths, filepath.Join(dir, p))
			}
			res, err := ReadTree(context.Background(), "", paths, "local", nil)
			if err != nil {
				t.Fatal(err)
			}
			h := startSources(t, MergeOptions{}, fileSource(t, "local", paths...))
			st := h.waitSet(t, 5*time.Second, tt.want, res.Revision)
			if !strings.HasPrefix(st.Sources[0].Revision, "sha256:") || !st.Ready {
				t.Errorf("revision %q ready %v, want a sha256 tree hash and ready", st.Sources[0].Revision, st.Ready)
			}
			for _, e := range st.Accepted {
				if e.Revision != res.Revision || e.Origin.Source != "local" {
					t.Errorf("entry %s: revision %q source %q, want %q local", e.Manifest.ID, e.Revision, e.Origin.Source, res.Revision)
				}
			}
		})
	}
}

// TestFileChangeSeenByFsnotify: every kind of change is seen within one
// second while the polling backstop is an hour away.
func TestFileChangeSeenByFsnotify(t *testing.T) {
	tests := []struct {
		name string
		// root is the source's path inside the temp dir ("" = the dir).
		root   string
		setup  func(t *testing.T, dir string)
		change func(t *testing.T, dir string)
		before []string
		after  []string
	}{
		{
			name: "write in place",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), podYAML("web", "1"))
			},
			change: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), podYAML("web", "2"))
			},
			before: []string{"web=1"},
			after:  []string{"web=2"},
		},
		{
			name: "editor write: temp file then rename over",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), podYAML("web", "1"))
			},
			change: func(t *testing.T, dir string) {
				tmp := filepath.Join(dir, ".web.yaml.swp")
				testkit.WriteFile(t, tmp, podYAML("web", "2"))
				if err := os.Rename(tmp, filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			before: []string{"web=1"},
			after:  []string{"web=2"},
		},
		{
			name: "file created in a new subfolder",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), podYAML("web", "1"))
			},
			change: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "new", "deeper", "api.yaml"), podYAML("api", "1"))
			},
			before: []string{"web=1"},
			after:  []string{"api=1", "web=1"},
		},
		{
			name: "file removed",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "a.yaml"), podYAML("a", "1"))
				testkit.WriteFile(t, filepath.Join(dir, "b.yaml"), podYAML("b", "1"))
			},
			change: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			before: []string{"a=1", "b=1"},
			after:  []string{"b=1"},
		},
		{
			name: "single-file source replaced by rename",
			root: "web.yaml",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "web.yaml"), podYAML("web", "1"))
			},
			change: func(t *testing.T, dir string) {
				tmp := filepath.Join(dir, "web.yaml.new")
				testkit.WriteFile(t, tmp, podYAML("web", "2"))
				if err := os.Rename(tmp, filepath.Join(dir, "web.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			before: []string{"web=1"},
			after:  []string{"web=2"},
		},
		{
			name: "source path is a symlink to a folder",
			root: "current",
			setup: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "release-1", "web.yaml"), podYAML("web", "1"))
				if err := os.Symlink("release-1", filepath.Join(dir, "current")); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, dir string) {
				testkit.WriteFile(t, filepath.Join(dir, "release-1", "sub", "api.yaml"), podYAML("api", "1"))
			},
			before: []string{"web=1"},
			after:  []string{"api=1", "web=1"}, // sub/api.yaml sorts before web.yaml
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			root := filepath.Join(dir, tt.root)
			h := startSources(t, MergeOptions{AllowEmpty: true}, fileSource(t, "local", root))
			st := h.waitSet(t, 5*time.Second, tt.before, "")
			rev := st.Sources[0].Revision
			tt.change(t, dir)
			res, err := ReadTree(context.Background(), "", []string{root}, "local", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision == rev {
				t.Fatalf("the change did not change the tree revision %s", rev)
			}
			start := time.Now()
			h.waitSet(t, time.Second, tt.after, res.Revision)
			t.Logf("change seen after %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestFileFailureKeepsLastGoodSet: a bad file anywhere in the tree fails
// the whole read; the last good set stays, the error is reported, and
// nothing hangs. Fixing the tree brings the source back.
func TestFileFailureKeepsLastGoodSet(t *testing.T) {
	tests := []struct {
		name string
		// breakIt damages the tree and returns how to repair it.
		breakIt func(t *testing.T, dir string) (repair func())
		errLike string
	}{
		{
			name: "YAML error in one file of ten",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "pod-05.yaml")
				testkit.WriteFile(t, p, "version: v1beta1\nid: pod-05\ncontainers: [\n")
				return func() { testkit.WriteFile(t, p, podYAML("pod-05", "1")) }
			},
			errLike: "pod-05.yaml",
		},
		{
			name: "symlink loop",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "loop.yaml")
				if err := os.Symlink("loop.yaml", p); err != nil {
					t.Fatal(err)
				}
				return func() { os.Remove(p) }
			},
			errLike: "too many levels of symbolic links",
		},
		{
			name: "dangling symlink",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "gone.yaml")
				if err := os.Symlink(filepath.Join(dir, "nowhere", "x.yaml"), p); err != nil {
					t.Fatal(err)
				}
				return func() { os.Remove(p) }
			},
			errLike: "no such file or directory",
		},
		{
			name: "FIFO named like a manifest",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "sub", "pipe.yaml")
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					// Should a reader block on the FIFO, opening it for
					// writing and closing it lets the reader go (EOF).
					if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
						f.Close()
					}
				})
				return func() { os.Remove(p) }
			},
			errLike: "not a regular file",
		},
		{
			name: "symlink to a folder named like a manifest",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "more.yaml")
				if err := os.Symlink(t.TempDir(), p); err != nil {
					t.Fatal(err)
				}
				return func() { os.Remove(p) }
			},
			errLike: "symlink to a folder",
		},
		{
			name: "file over 10 MiB",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "huge.yaml")
				f, err := os.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Truncate(11 << 20); err != nil {
					t.Fatal(err)
				}
				f.Close()
				return func() { os.Remove(p) }
			},
			errLike: "larger than the size limit",
		},
		{
			name: "invalid new version of a manifest is no read error",
			breakIt: func(t *testing.T, dir string) func() {
				p := filepath.Join(dir, "pod-03.yaml")
				testkit.WriteFile(t, p, "version: v1beta1\nid: pod-03\nlabels: {v: \"2\"}\ncontainers:\n  - name: app\n    image: example.org/app:1\n    bogus: field\n")
				return func() { testkit.WriteFile(t, p, podYAML("pod-03", "1")) }
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var want []string
			for i := range 10 {
				id := fmt.Sprintf("pod-%02d", i)
				testkit.WriteFile(t, filepath.Join(dir, id+".yaml"), podYAML(id, "1"))
				want = append(want, id+"=1")
			}
			h := startSources(t, MergeOptions{}, fileSource(t, "local", dir))
			st := h.waitSet(t, 5*time.Second, want, "")
			rev := st.Sources[0].Revision
			repair := tt.breakIt(t, dir)
			if tt.errLike == "" {
				// The source reads fine; the merge keeps the previous good
				// version of pod-03 (with its old revision) and reports the
				// rejection.
				testkit.WaitFor(t, 2*time.Second, func() (bool, string) {
					st = h.m.State()
					return st.Sources[0].Revision != rev, "revision " + st.Sources[0].Revision
				})
				if got := ids(st); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("accepted %v, want %v", got, want)
				}
				if e := st.Accepted[3]; e.Revision != rev {
					t.Errorf("pod-03 revision %q, want the previous good one %q", e.Revision, rev)
				}
				if len(st.Rejected) != 1 || st.Rejected[0].ID != "pod-03" || !strings.Contains(strings.Join(st.Rejected[0].Reasons, ";"), "bogus") {
					t.Errorf("rejected %+v, want pod-03 for its unknown field", st.Rejected)
				}
			} else {
				st = h.waitErr(t, 2*time.Second, 0, tt.errLike)
				sameSet(t, st, want, rev)
				if !st.Ready {
					t.Error("not ready after an error following a good set")
				}
			}
			repair()
			h.waitSet(t, 2*time.Second, want, rev)
		})
	}
}

// TestFileEmptyTree: a tree that held manifests and now holds none (its
// folder renamed away inside a checkout) is an error unless AllowEmpty; a
// configured path that no longer exists is a read error either way, as
// removal needs a successful read.
func TestFileEmptyTree(t *testing.T) {
	tests := []struct {
		name       string
		allowEmpty bool
		moveRoot   bool
		wantErr    string
		want       []string
	}{
		{name: "folder moved out, guard on", wantErr: "holds no manifests", want: []string{"web=1"}},
		{name: "folder moved out, allowEmpty", allowEmpty: true, want: nil},
		{name: "source path moved away, guard on", moveRoot: true, wantErr: "no such file or directory", want: []string{"web=1"}},
		{name: "source path moved away, allowEmpty", allowEmpty: true, moveRoot: true, wantErr: "no such file or directory", want: []string{"web=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			root := filepath.Join(dir, "checkout")
			testkit.WriteFile(t, filepath.Join(root, "hosts", "web-1", "web.yaml"), podYAML("web", "1"))
			h := startSources(t, MergeOptions{AllowEmpty: tt.allowEmpty}, fileSource(t, "local", root))
			st := h.waitSet(t, 5*time.Second, []string{"web=1"}, "")
			rev := st.Sources[0].Revision
			from := filepath.Join(root, "hosts")
			if tt.moveRoot {
				from = root
			}
			if err := os.Rename(from, filepath.Join(elsewhere, "moved")); err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				st = h.waitErr(t, 2*time.Second, 0, tt.wantErr)
				sameSet(t, st, tt.want, rev)
				return
			}
			h.waitSet(t, 2*time.Second, tt.want, "")
		})
	}
}
