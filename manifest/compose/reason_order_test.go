package compose_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/compose"
)

// TestReasonsComeInOneOrder: a service's environment entries without a
// value (notes) and its labels under Compose's own prefix (errors) are
// reported sorted by name, the same on every load (validate, diff and the
// status document's rejected reasons would otherwise change from run to
// run).
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
	reasons := func() []string {
		pods, errs := load(t, files, compose.Options{})
		for _, p := range pods {
			for _, n := range p.Notes {
				errs = append(errs, n.Error())
			}
		}
		return errs
	}
	first := reasons()
	if len(first) != 8 {
		t.Fatalf("errors and notes %q, want 8 (5 environment entries, 3 labels)", first)
	}
	for range 20 {
		if again := reasons(); !slices.Equal(again, first) {
			t.Fatalf("reasons in another order:\n%q\nthen\n%q", first, again)
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
