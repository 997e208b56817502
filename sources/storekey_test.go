package sources

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/testkit"
)

const sealedEnvValue = "s3cret-env-value-7f1c"

func envPodYAML(id string) string {
	return "version: v1beta1\nid: " + id + "\ncontainers:\n  - name: app\n    image: example.org/app:1\n    env: [{name: TOKEN, value: " + sealedEnvValue + "}]\n"
}

// Saved sets hold the manifests as delivered, env values included: they
// are sealed (AES-256-GCM, stateDir/state.key), so no env value is plain
// text under stateDir; an earlier release's plain sets still load and are
// sealed at the next save; a damaged key or a set moved to another source's
// name counts as a damaged set.
func TestSavedSetsSealed(t *testing.T) {
	tests := []struct {
		name string
		// damage changes stateDir after the push was saved.
		damage func(t *testing.T, dir string)
		// loaded says whether the push set is loaded after the restart.
		loaded  bool
		problem string
	}{
		{name: "sealed", loaded: true},
		{name: "plain set of an earlier release", loaded: true, damage: func(t *testing.T, dir string) {
			st := savedSet{Name: "push", Type: "file", Revision: "p1", Manifests: decoded(t, "push", envPodYAML("pushed"))}
			b, err := json.Marshal(&st)
			if err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, filepath.Join(dir, "sources", "push.json"), string(b))
		}},
		{name: "key damaged", problem: StateKeyFile, damage: func(t *testing.T, dir string) {
			testkit.WriteFile(t, filepath.Join(dir, StateKeyFile), "not a key\n")
		}},
		{name: "key with CRLF", loaded: true, damage: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, StateKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, filepath.Join(dir, StateKeyFile), strings.TrimSpace(string(b))+"\r\n")
		}},
		{name: "key lost", problem: StateKeyFile, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, StateKeyFile)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "another source's sealed set", problem: "sources/push.json", damage: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "sources", "local.json"))
			if err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, filepath.Join(dir, "sources", "push.json"), string(b))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newMerger(t, MergeOptions{StateDir: dir}, "local", "push")
			m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("web", "1"))})
			if _, a := applyReply(m, Update{Source: "push", Revision: "p1", Manifests: decoded(t, "push", envPodYAML("pushed"))}); a.Err != nil {
				t.Fatal(a.Err)
			}
			path := filepath.Join(dir, "sources", "push.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte(sealMagic)) || bytes.Contains(b, []byte(sealedEnvValue)) || bytes.Contains(b, []byte("pushed")) {
				t.Fatalf("saved set is not sealed: %q", b)
			}
			if fi, err := os.Stat(filepath.Join(dir, StateKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("state key: %v %v, want mode 0600", fi, err)
			}
			if tt.damage != nil {
				tt.damage(t, dir)
			}

			var problems atomicfile.Problems
			m2 := newMerger(t, MergeOptions{StateDir: dir, Problems: &problems}, "local", "push")
			st := m2.State()
			got := strings.Join(accepted(st), " ")
			if tt.loaded != strings.Contains(got, "pushed") || st.Sources[1].Delivered != tt.loaded {
				t.Errorf("after the restart: accepted %q, push delivered %v; want the push set loaded: %v", got, st.Sources[1].Delivered, tt.loaded)
			}
			if b, err := os.ReadFile(path); tt.loaded && (err != nil || !bytes.HasPrefix(b, []byte(sealMagic))) {
				t.Errorf("push.json after the restart: %v, sealed %v; want it sealed at load", err, bytes.HasPrefix(b, []byte(sealMagic)))
			}
			list := problems.List()
			switch {
			case tt.problem == "" && len(list) > 0:
				t.Errorf("problems %+v, want none", list)
			case tt.problem != "" && !slices.ContainsFunc(list, func(p atomicfile.Problem) bool { return p.File == tt.problem }):
				t.Errorf("problems %+v, want one of %s", list, tt.problem)
			}
			if tt.problem != "" && !strings.Contains(st.Sources[1].Notice, "saved set unreadable") && tt.problem != StateKeyFile {
				t.Errorf("push notice %q, want saved set unreadable", st.Sources[1].Notice)
			}

			// The next save seals (again) with the key in place.
			m2.Apply(Update{Source: "local", Revision: "l2", Manifests: decoded(t, "local", podYAML("web", "2"))})
			if _, a := applyReply(m2, Update{Source: "push", Revision: "p2", Manifests: decoded(t, "push", envPodYAML("pushed"))}); a.Err != nil {
				t.Fatal(a.Err)
			}
			for _, name := range []string{"local", "push"} {
				b, err := os.ReadFile(filepath.Join(dir, "sources", name+".json"))
				if err != nil || !bytes.HasPrefix(b, []byte(sealMagic)) {
					t.Errorf("%s.json after a save: %v, sealed %v", name, err, bytes.HasPrefix(b, []byte(sealMagic)))
				}
			}
			m3 := newMerger(t, MergeOptions{StateDir: dir}, "local", "push")
			wantList(t, "accepted after another restart", accepted(m3.State()), []string{"web=2@l2", "pushed=@p2"})
		})
	}
}
