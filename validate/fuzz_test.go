package validate_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// FuzzDecodeValidate decodes its input as the file of source "a", gives
// the same manifests to a second source "b", and checks them with Set. It
// must not panic, every error must name its origin on one line, Set must
// be deterministic, and every manifest must be accepted or rejected once:
// b's all rejected, as a declared every id first.
func FuzzDecodeValidate(f *testing.F) {
	for _, data := range testkit.Corpus(f, 50, "testdata", filepath.Join("..", "manifest", "testdata")) {
		f.Add(data)
	}
	// The hostile manifests written in the tests (validation's own, and
	// those of sync's and the sources' tests of what a pod may not do).
	for _, s := range testkit.Literals(f, func(s string) bool { return strings.Contains(s, "v1beta1") },
		"build_test.go", "volumes_test.go", "policy_test.go", "set_test.go",
		filepath.Join("..", "sync", "dependson_test.go"), filepath.Join("..", "sync", "networks_test.go"),
		filepath.Join("..", "sync", "files_test.go"), filepath.Join("..", "sync", "hidden_test.go"),
		filepath.Join("..", "sources", "build_test.go"), filepath.Join("..", "sources", "compose_test.go")) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := manifest.Decode(data, manifest.Origin{Source: "a", File: "f.yaml"})
		for _, e := range validate.Flatten(err) {
			if e.Origin.Source != "a" || e.Origin.File != "f.yaml" {
				t.Errorf("decode error %q lost its origin", e)
			}
			if strings.Contains(e.Error(), "\n") {
				t.Errorf("decode error spans lines: %q", e)
			}
		}
		b := make([]manifest.Sourced, len(ms))
		for i, s := range ms {
			s.Origin.Source = "b"
			b[i] = s
		}
		sources := []validate.Source{{Name: "a", Manifests: ms}, {Name: "b", Manifests: b}}
		res := validate.Set(sources, corpusOptions)
		if again := validate.Set(sources, corpusOptions); !reflect.DeepEqual(res, again) {
			t.Fatalf("Set is not deterministic:\n%+v\n%+v", res, again)
		}
		if got, want := len(res.Accepted)+len(res.Rejected), 2*len(ms); got != want {
			t.Fatalf("%d accepted + rejected, want %d", got, want)
		}
		ids := map[string]bool{}
		for _, a := range res.Accepted {
			if a.Origin.Source != "a" {
				t.Errorf("accepted %q from %s, which only repeats a", a.Manifest.ID, a.Origin.Source)
			}
			if ids[a.Manifest.ID] {
				t.Errorf("id %q accepted twice", a.Manifest.ID)
			}
			ids[a.Manifest.ID] = true
			if err := validate.Manifest(a, corpusOptions); err != nil {
				t.Errorf("accepted an invalid manifest: %v", err)
			}
		}
		for _, r := range res.Rejected {
			if len(r.Reasons) == 0 {
				t.Errorf("rejected %q without a reason", r.ID)
			}
			for _, reason := range r.Reasons {
				if strings.Contains(reason, "\n") {
					t.Errorf("reason spans lines: %q", reason)
				}
				if !strings.HasPrefix(reason, r.Source+":") {
					t.Errorf("reason %q does not name its source %s", reason, r.Source)
				}
			}
		}
	})
}
