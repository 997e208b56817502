package manifest

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hostlet/hostlet/internal/testkit"
)

// yamlJSONSeeds are documents whose conversion differs most easily: HTML
// characters, escapes, invalid UTF-8, numbers of every kind, keys that
// are not strings, aliases, nulls.
var yamlJSONSeeds = []string{
	"a: <b> & </c>\n",
	"a: \"\\x01\\0\\xff\\u2028\\\"\\\\\"\n",
	"a: [1, -1, 1.5, 1e3, 1e21, 1e-7, 0x10, 0o7, .inf, -.inf, 9223372036854775807, 18446744073709551615, 1e400]\n",
	"1: a\n2.5: b\ntrue: c\nnull: d\n",
	"a: &x {b: [1, 2]}\nc: *x\nd: {<<: *x, e: 3}\n",
	"a: yes\nb: off\nc: ~\nd: 2001-12-14t21:59:43.10-05:00\ne: !!binary aGk=\n",
	"[{id: a}, {id: b}]\n",
	"a: .nan\n",
	"? [a]\n: b\n",
}

// FuzzYAMLToJSONMatchesSigsYAML: the converter Decode uses (yamlToJSON)
// must read every document as sigs.k8s.io/yaml's YAMLToJSONStrict, which
// Decode used before, does: both fail, or both give JSON that decodes to
// the same value. Manifests, and so their spec hashes, cannot change.
func FuzzYAMLToJSONMatchesSigsYAML(f *testing.F) {
	for _, s := range yamlJSONSeeds {
		f.Add([]byte(s))
	}
	for _, data := range testkit.Corpus(f, 1, filepath.Join("testdata")) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<16 || checkAliases(doc) != nil {
			return
		}
		got, gotErr := yamlToJSON(doc)
		want, wantErr := yaml.YAMLToJSONStrict(doc)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("yamlToJSON error %v, YAMLToJSONStrict error %v", gotErr, wantErr)
		}
		if gotErr != nil {
			if gotErr.Error() != wantErr.Error() {
				t.Fatalf("yamlToJSON error %q, YAMLToJSONStrict error %q", gotErr, wantErr)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("yamlToJSON wrote invalid JSON %q", got)
		}
		// Two keys that convert to the same string ("0" and "0.0") keep
		// one value: yamlToJSON's is one of those YAMLToJSONStrict picks
		// by Go's map order, unevenly (87 to 13 in 200 runs for a pair of
		// keys): a thousand tries see each pick.
		for range 1000 {
			if reflect.DeepEqual(jsonValue(t, got), jsonValue(t, want)) {
				return
			}
			want, _ = yaml.YAMLToJSONStrict(doc)
		}
		t.Fatalf("yamlToJSON %s\nYAMLToJSONStrict %s", got, want)
	})
}

func jsonValue(t *testing.T, js []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", js, err)
	}
	return v
}
