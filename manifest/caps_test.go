package manifest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// tinyPod is a manifest of one line, as a list item.
const tinyPod = "- {version: v1beta1, id: a}\n"

// decodeAllocs decodes data and returns what Decode allocated, in bytes.
func decodeAllocs(t *testing.T, data []byte) ([]manifest.Sourced, uint64, error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ms, err := manifest.Decode(data, manifest.Origin{Source: "local", File: "pods.yaml"})
	runtime.ReadMemStats(&after)
	return ms, after.TotalAlloc - before.TotalAlloc, err
}

// TestDecodeCountsManifestsPerFile (issue 30, finding 5): a file holds at
// most MaxFileManifests manifests, counted as documents and list items;
// one more fails the whole file with an error naming it and the bound.
func TestDecodeCountsManifestsPerFile(t *testing.T) {
	n := manifest.MaxFileManifests
	tests := []struct {
		name string
		data string
		ok   bool
	}{
		{"list at the bound", strings.Repeat(tinyPod, n), true},
		{"list over the bound", strings.Repeat(tinyPod, n+1), false},
		{"documents at the bound", strings.Repeat("---\n{version: v1beta1, id: a}\n", n), true},
		{"documents over the bound", strings.Repeat("---\n{version: v1beta1, id: a}\n", n+1), false},
		{"empty documents over the bound", strings.Repeat("---\n", n+1), false},
		{"lists in documents over the bound", strings.Repeat("---\n"+strings.Repeat(tinyPod, 10), n/10) + "---\n" + tinyPod, false},
		{"JSON list over the bound", "[" + strings.TrimSuffix(strings.Repeat(`{"version":"v1beta1","id":"a"},`, n+1), ",") + "]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.data), manifest.Origin{Source: "local", File: "pods.yaml"})
			if tt.ok {
				if len(ms) != n {
					t.Fatalf("decoded %d manifests, want %d (error %v)", len(ms), n, err)
				}
				return
			}
			if !errors.Is(err, manifest.ErrTooManyManifests) || len(ms) != 0 {
				t.Fatalf("decoded %d manifests, error %v; want none and ErrTooManyManifests", len(ms), err)
			}
			for _, want := range []string{"local:pods.yaml", fmt.Sprint(n)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

// TestDecodeRefusesStructureBeforeDecodingIt (issue 30, finding 5): a 3 MB
// file of 300,000 tiny manifests took the agent from 30 MiB to 291 MiB.
// A file whose structure is over MaxFileMarks (and so the memory its
// decode would take) is refused after one pass over its bytes, having
// allocated next to nothing; so is a document whose aliases expand past
// the same bound, and a YAML document over MaxYAMLDocument.
func TestDecodeRefusesStructureBeforeDecodingIt(t *testing.T) {
	bomb := []string{"version: v1beta1", "id: a", "x-bomb:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"}
	for i := 1; i < 9; i++ {
		bomb = append(bomb, fmt.Sprintf("  a%d: &a%d [%s]", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")))
	}
	tests := []struct {
		name  string
		data  string
		want  error
		alloc uint64
	}{
		{"300000 tiny manifests", strings.Repeat("- {id: 1}\n", 300_000), manifest.ErrTooComplex, 1 << 20},
		{"one huge list", "version: v1beta1\nid: a\nlabels: [" + strings.Repeat("1,", 1<<20) + "1]\n", manifest.ErrTooComplex, 1 << 20},
		{"many keys", "version: v1beta1\nid: a\nlabels:\n" + strings.Repeat("  k: v\n", 100_000), manifest.ErrTooComplex, 1 << 20},
		{"deep nesting", strings.Repeat("[", 60_000) + strings.Repeat("]", 60_000), manifest.ErrTooComplex, 1 << 20},
		{"alias bomb", strings.Join(bomb, "\n") + "\n", errors.New("excessive aliasing"), 8 << 20},
		{"long YAML document", "version: v1beta1\nid: a\nlabels: {a: " + strings.Repeat("x", manifest.MaxYAMLDocument) + "}\n", manifest.ErrTooLarge, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, alloc, err := decodeAllocs(t, []byte(tt.data))
			if len(ms) != 0 || err == nil || !strings.Contains(err.Error(), tt.want.Error()) {
				t.Fatalf("decoded %d manifests, error %v; want none and %v", len(ms), err, tt.want)
			}
			if !strings.Contains(err.Error(), "local:pods.yaml") {
				t.Errorf("error %q does not name the file", err)
			}
			if alloc > tt.alloc {
				t.Errorf("refusing it allocated %d bytes, want at most %d", alloc, tt.alloc)
			}
		})
	}
}

// TestDecodeStructureBoundLeavesRealFilesAlone: a file of MaxFileManifests
// pods of the size the examples have decodes, as does a files volume of
// megabytes of base64 data (which holds no structure mark).
func TestDecodeStructureBoundLeavesRealFilesAlone(t *testing.T) {
	pod := `- version: v1beta1
  id: web-%d
  labels: {app: web, tier: front}
  containers:
    - name: app
      image: example.org/web:1.2.3
      ports: [{containerPort: 8080, hostPort: %d}]
      env: [{name: MODE, value: production}, {name: URL, value: "http://db:5432/app"}]
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, dockerVolume: web-data}]
`
	var b strings.Builder
	for i := range 600 {
		fmt.Fprintf(&b, pod, i, 10000+i)
	}
	ms, err := manifest.Decode([]byte(b.String()), manifest.Origin{Source: "local", File: "pods.yaml"})
	if err != nil || len(ms) != 600 {
		t.Fatalf("600 pods: %d decoded, error %v", len(ms), err)
	}
	files := "version: v1beta1\nid: a\nvolumes:\n  - name: f\n    files: {source: f, items: [{data: " + strings.Repeat("QUJD", 700_000) + "}]}\n"
	if ms, err := manifest.Decode([]byte(files), manifest.Origin{Source: "local", File: "files.yaml"}); err != nil || len(ms) != 1 {
		t.Fatalf("2.8 MB of base64 data: %d decoded, error %v", len(ms), err)
	}
}
