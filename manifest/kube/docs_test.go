package kube

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryRefusedField keeps docs/kubernetes.md true: every
// field the tables refuse is in its table of refused fields, with the
// words hostlet's error gives.
func TestDocsListEveryRefusedField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, e := range allRules() {
		if e.rule.do != refused {
			continue
		}
		row := "| " + e.kind + " | `" + e.pattern + "` | " + e.rule.why + " |"
		if !strings.Contains(text, row) {
			t.Errorf("docs/kubernetes.md has no row %s", row)
		}
	}
}
