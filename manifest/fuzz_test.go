package manifest_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
)

// addSeeds adds every file under the given folders to f's seed corpus.
func addSeeds(f *testing.F, dirs ...string) {
	f.Helper()
	for _, data := range testkit.Corpus(f, 1, dirs...) {
		f.Add(data)
	}
}

// FuzzHash decodes its input and checks, for every manifest, that hashing
// does not panic, that defaults written out do not change the hashes, and
// that the manifest written out with encoding/json decodes again to the
// same hashes (status and state files store manifests as JSON).
func FuzzHash(f *testing.F) {
	addSeeds(f, filepath.Join("testdata", "golden"), filepath.Join("..", "validate", "testdata"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, _ := manifest.Decode(data, origin)
		for _, s := range ms {
			m := s.Manifest
			want := hashes(m)
			if got := hashes(m.WithDefaults()); !slices.Equal(got, want) {
				t.Fatalf("defaults written out change the hashes:\n got %v\nwant %v", got, want)
			}
			js, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			again, err := manifest.Decode(js, origin)
			if err != nil {
				t.Fatalf("decoding %s again: %v", js, err)
			}
			if len(again) != 1 || len(again[0].Errors) > 0 {
				t.Fatalf("decoding %s again: %d manifests, errors %v", js, len(again), again[0].Errors)
			}
			if got := hashes(again[0].Manifest); !slices.Equal(got, want) {
				t.Fatalf("hashes changed after a JSON round trip through %s:\n got %v\nwant %v", js, got, want)
			}
		}
	})
}
