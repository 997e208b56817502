package sync

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// FuzzDecodeRestarts: any restarts file (a damaged one, an older
// hostlet's) decodes to counts that are never negative, each of a slot
// ("pod/container"), or fails; it never panics.
func FuzzDecodeRestarts(f *testing.F) {
	for _, s := range []string{
		`{"slots":{"web/app":{"count":3,"containerID":"abc","engineCount":1}}}`,
		`{"slots":{"web/app":{"count":-1}}}`, `{"slots":{"noslash":{}}}`, `{"slots":{"a/b":null}}`,
		`{"slots":null}`, `{}`, `[]`, `{"slots":{"a/b":{"count":1e400}}}`, "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var rs restartStore
		if err := decodeRestarts(b, &rs); err != nil {
			return
		}
		for k, sr := range rs.Slots {
			if sr == nil || sr.Count < 0 || sr.EngineCount < 0 || !strings.Contains(k, "/") {
				t.Fatalf("slot %q decoded as %+v", k, sr)
			}
		}
	})
}

// FuzzDecodeRollouts: any rollouts file decodes or fails; a kept last
// ready version that is not the pod's own (another id, no container, a
// hash that is not its manifest's) is dropped, never restored.
func FuzzDecodeRollouts(f *testing.F) {
	m := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{Name: "app", Image: "busybox"}}}
	good := `{"manifest":{"version":"v1beta1","id":"web","containers":[{"name":"app","image":"busybox"}]},"hash":"` + manifest.PodHash(m) + `"}`
	for _, s := range []string{
		`{"pods":{"web":{"rollout":{"state":"Complete","hash":"x"},"good":` + good + `}}}`,
		`{"pods":{"api":{"good":` + good + `}}}`,
		`{"pods":{"web":{"good":{"manifest":{"id":"web"},"hash":""}}}}`,
		`{"pods":{"web":null}}`, `{"pods":null}`, `{"pods":{"web":{"applied":"not a time"}}}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, err := decodeRollouts(b, nil)
		if err != nil {
			return
		}
		for id, r := range pods {
			if r == nil {
				t.Fatalf("pod %q: a nil rollout kept", id)
			}
			if g := r.Good; g != nil && (g.Manifest.ID != id || len(g.Manifest.Containers) == 0 || g.Hash != manifest.PodHash(g.Manifest)) {
				t.Fatalf("pod %q: kept a last ready version that is not its own: %+v", id, g)
			}
		}
	})
}
