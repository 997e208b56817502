package compose_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/compose"
)

// TestReasonsComeInOneOrder: a service's environment entries without a
// value and its labels under Compose's own prefix are reported sorted by
// name, the same on every load (validate, diff and the status document's
// rejected reasons would otherwise change from run to run).
func TestReasonsComeInOneOrder(t *testing.T) {
	files := mapFiles{"compose.yaml": `services:
  web:
    image: busybox:1.37
    environment: [ZED, ALPHA, MIKE, BRAVO, KILO]
    labels:
      com.docker.compose.zz: "1"
      com.docker.compose.aa: "2"
      com.docker.compose.mm: "3"
`}
	_, first := load(t, files, compose.Options{})
	if len(first) != 8 {
		t.Fatalf("errors %q, want 8 (5 environment entries, 3 labels)", first)
	}
	for range 20 {
		if _, again := load(t, files, compose.Options{}); !slices.Equal(again, first) {
			t.Fatalf("errors in another order:\n%q\nthen\n%q", first, again)
		}
	}
	var env, labels []string
	for _, e := range first {
		for _, k := range []string{"ALPHA", "BRAVO", "KILO", "MIKE", "ZED"} {
			if strings.Contains(e, "environment."+k+":") {
				env = append(env, k)
			}
		}
		for _, k := range []string{"aa", "mm", "zz"} {
			if strings.Contains(e, "labels.com.docker.compose."+k+":") {
				labels = append(labels, k)
			}
		}
	}
	if !slices.IsSorted(env) || len(env) != 5 || !slices.IsSorted(labels) || len(labels) != 3 {
		t.Errorf("environment %q, labels %q: want every one, sorted by name", env, labels)
	}
}
