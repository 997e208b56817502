package manifest_test

import (
	"slices"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// TestDecodeContentAfterTheManifest (issue 12, finding 11): NDJSON (two
// JSON objects on two lines) and anything after a flow mapping validated as
// "OK: 1 manifests", the rest dropped without a word. Content after the
// first complete value of a document is an error naming the file and line,
// and the document gives no manifest; what only looks similar (comments,
// end markers, documents separated by ---) keeps decoding.
func TestDecodeContentAfterTheManifest(t *testing.T) {
	const (
		a = `{"version":"v1beta1","id":"a","containers":[{"name":"app","image":"nginx"}]}`
		b = `{"version":"v1beta1","id":"b","containers":[{"name":"app","image":"nginx"}]}`
	)
	const hint = "; separate manifests with --- or put them in a list"
	tests := []struct {
		name string
		in   string
		want []string
		ids  []string
	}{
		{name: "NDJSON", in: a + "\n" + b + "\n", want: []string{"a:f.json: document 1: unexpected content at line 2 after the manifest" + hint}},
		{name: "NDJSON without a final newline", in: a + "\n" + b, want: []string{"a:f.json: document 1: unexpected content at line 2 after the manifest" + hint}},
		{name: "two JSON objects on one line", in: a + " " + b + "\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},
		{name: "JSON object and garbage", in: a + " xx\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},
		{name: "JSON list and an object", in: "[" + a + "]\n" + b + "\n", want: []string{"a:f.json: document 1: unexpected content at line 2 after the list of manifests" + hint}},
		{name: "flow mapping and another on the same line", in: "{version: v1beta1, id: a} {version: v1beta1, id: b}\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},
		{name: "flow mapping and a block key", in: "{version: v1beta1, id: a}\nid: b\n", want: []string{"a:f.json: document 1: unexpected content at line 2 after the manifest" + hint}},
		{name: "flow mapping over lines, then more after blank lines", in: "{version: v1beta1,\n id: a}\n\n# c\n\n{id: b}\n", want: []string{"a:f.json: document 1: unexpected content at line 6 after the manifest" + hint}},
		{name: "anchored flow mapping and more", in: "&x {version: v1beta1, id: a} [1]\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},
		{name: "tagged flow mapping and more", in: "!!map {version: v1beta1, id: a}\nb: 2\n", want: []string{"a:f.json: document 1: unexpected content at line 2 after the manifest" + hint}},
		{name: "quoted braces do not end the mapping", in: "{version: v1beta1, id: a, labels: {x: \"}\", y: '{'}} {id: b}\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},
		{name: "in the second document, lines count from the file's start", in: "---\n" + a + "\n---\n" + a + "\n" + b + "\n", want: []string{"a:f.json: document 2: unexpected content at line 5 after the manifest" + hint}, ids: []string{"a"}},
		{name: "after a marker on the same line", in: "--- " + a + " " + b + "\n", want: []string{"a:f.json: document 1: unexpected content at line 1 after the manifest" + hint}},

		{name: "one JSON object", in: a + "\n\n", ids: []string{"a"}},
		{name: "JSON list", in: "[" + a + ",\n" + b + "]\n", ids: []string{"a", "b"}},
		{name: "JSON objects separated by ---", in: a + "\n---\n" + b + "\n", ids: []string{"a", "b"}},
		{name: "flow mapping and a comment", in: "{version: v1beta1, id: a, containers: [{name: app, image: nginx}]} # the pod\n# more\n", ids: []string{"a"}},
		{name: "flow mapping and an end marker", in: "{version: v1beta1, id: a, containers: [{name: app, image: nginx}]}\n...\n", ids: []string{"a"}},
		{name: "block mapping with flow values", in: "version: v1beta1\nid: a\nlabels: {x: \"}\"}\ncontainers: [{name: app, image: nginx}]\n", ids: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.in), manifest.Origin{Source: "a", File: "f.json"})
			if got := errorLines(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
			var ids []string
			for _, m := range ms {
				ids = append(ids, m.Manifest.ID)
			}
			if !slices.Equal(ids, tt.ids) {
				t.Errorf("decoded %q, want %q", ids, tt.ids)
			}
		})
	}
}
