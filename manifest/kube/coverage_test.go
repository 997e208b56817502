package kube

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// indexes are the list indexes of a field path ([0]), made [] in its
// pattern.
var indexes = regexp.MustCompile(`\[\d+\]`)

// TestEveryTranslatedFieldHasAGoldenExample walks the objects of the
// golden files: every field the tables translate is set in at least one
// of them, so its translation is shown (and kept) by a golden file.
func TestEveryTranslatedFieldHasAGoldenExample(t *testing.T) {
	files, _ := filepath.Glob("testdata/translate/*.yaml")
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := manifest.Decode(data, manifest.Origin{File: f})
		for _, m := range ms {
			if m.Kube == nil {
				continue
			}
			v, _, _ := decode(m.Origin, m.Kube)
			if v == nil {
				continue
			}
			w := walkFields(v, objectRules(m.Kube.Kind))
			for _, p := range w.translated {
				seen[m.Kube.Kind+" "+p] = true
			}
			// A translated struct whose fields set are all accepted (a
			// Deployment's strategy) is shown by them.
			for _, f := range w.accepted {
				seen[m.Kube.Kind+" "+indexes.ReplaceAllString(f.path, "[]")] = true
			}
		}
	}
	covered := func(kind, pattern string) bool {
		for p := range seen {
			k, rest, _ := strings.Cut(p, " ")
			if kind != "Pod" && k != kind {
				continue
			}
			if kind == "Pod" {
				rest = strings.TrimPrefix(rest, "spec.template.")
			}
			if rest == pattern || strings.HasPrefix(rest, pattern+".") || strings.HasPrefix(rest, pattern+"[]") {
				return true
			}
		}
		return false
	}
	for _, e := range allRules() {
		if e.rule.do != translated && e.rule.do != translatedWhole {
			continue
		}
		if !covered(e.kind, e.pattern) {
			t.Errorf("%s %s is translated but set in no file of testdata/translate", e.kind, e.pattern)
		}
	}
}
