package rollouts

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

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
