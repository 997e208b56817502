package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// $(VAR) expands as Kubernetes expands it, $$ escapes a $, and what a
// reference names is read the same way expansion reads it.
func TestExpandAsKubernetes(t *testing.T) {
	vars := map[string]string{"A": "x", "PW": "secret"}
	tests := []struct {
		in, want string
		refs     []string
	}{
		{"$(A)-$(B)", "x-$(B)", []string{"A"}},
		{"$$(A)", "$(A)", nil},
		{"$$$(PW)", "$secret", []string{"PW"}},
		{"$(A", "$(A", nil},
		{"a$", "a$", nil},
		{"$(A)$(A)", "xx", []string{"A", "A"}},
	}
	for _, tt := range tests {
		got, ok := expand(tt.in, vars, 1<<10)
		if !ok || got != tt.want {
			t.Errorf("expand(%q) = %q %v, want %q", tt.in, got, ok, tt.want)
		}
		if refs := references(tt.in, vars); !slices.Equal(refs, tt.refs) {
			t.Errorf("references(%q) = %q, want %q", tt.in, refs, tt.refs)
		}
	}
}

// Expansion is bounded: references to references cannot grow a small
// manifest past MaxExpandedBytes, for one value or a pod's together.
func TestExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: bomb}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    env:\n")
	b.WriteString("    - {name: A0, value: \"" + strings.Repeat("x", 1000) + "\"}\n")
	for level := 1; level <= 4; level++ {
		b.WriteString("    - {name: A" + string(rune('0'+level)) + ", value: \"" + strings.Repeat("$(A"+string(rune('0'+level-1))+")", 100) + "\"}\n")
	}
	errs := translateText(t, b.String())
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "expand it to more than 1048576 bytes") }) {
		t.Errorf("errors %q, want the expansion refused", errs)
	}
}

// A Secret's value never reaches the command line (shown in the status):
// a reference to a variable holding one, directly or through another
// variable, is an error.
func TestSecretValuesStayOutOfTheCommandLine(t *testing.T) {
	for _, args := range []string{`["--password=$(PW)"]`, `["$(INDIRECT)"]`, `["$$$(PW)"]`} {
		errs := translateText(t, `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: busybox
    env:
    - name: PW
      valueFrom: {secretKeyRef: {name: s, key: password}}
    - {name: INDIRECT, value: "pw=$(PW)"}
    args: `+args+`
`)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "holds a Secret's value") }) {
			t.Errorf("args %s: errors %q, want the Secret's value refused on the command line", args, errs)
		}
		for _, e := range errs {
			if strings.Contains(e, "hunter2") {
				t.Errorf("an error shows the Secret's value: %s", e)
			}
		}
	}
}

// translateText decodes and translates one file's text, returning every
// error's text (the source's, then each pod's).
func translateText(t *testing.T, text string) []string {
	t.Helper()
	ms, err := manifest.Decode([]byte(text), manifest.Origin{Source: "s", File: "f.yaml"})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	pods, errs := Translate(ms)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	for _, p := range pods {
		for _, e := range p.Errors {
			out = append(out, e.Error())
		}
	}
	return out
}
