package fleet

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// gzipped compresses s as a published set is.
func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPublishedSetBoundedBeforeDecoding (issue 30, finding 5): a published
// set of more than manifest.MaxSourceManifests manifests, or whose JSON
// holds more structure than manifest.MaxSourceMarks, is refused before its
// manifests are decoded (a 10 MiB set of `{}` items would make a million).
func TestPublishedSetBoundedBeforeDecoding(t *testing.T) {
	set := func(items string) string {
		return fmt.Sprintf(`{"format":%q,"release":"abc","source":"s","files":1,"manifests":[%s]}`, PublishedFormat, items)
	}
	item := `{"Origin":{"Source":"s"},"Manifest":{"version":"v1beta1","id":"a"}}`
	tests := []struct {
		name string
		json string
		want error
	}{
		{"at the bound", set(strings.TrimSuffix(strings.Repeat(item+",", manifest.MaxSourceManifests), ",")), nil},
		{"one over the bound", set(strings.TrimSuffix(strings.Repeat(item+",", manifest.MaxSourceManifests+1), ",")), manifest.ErrTooManyManifests},
		{"a million empty items", set(strings.TrimSuffix(strings.Repeat("{},", 1_000_000), ",")), manifest.ErrTooComplex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodePublished(gzipped(t, tt.json), "s")
			if tt.want == nil {
				if err != nil || len(p.Manifests) != manifest.MaxSourceManifests {
					t.Fatalf("decoded %d manifests, error %v", len(p.Manifests), err)
				}
				return
			}
			if !errors.Is(err, tt.want) || len(p.Manifests) != 0 {
				t.Fatalf("decoded %d manifests, error %v; want %v", len(p.Manifests), err, tt.want)
			}
		})
	}
}
