package manifest

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzFlowEnd checks flowEnd, which only finds the line to report, against
// the YAML decoder: for a document that decodes with a flow collection as
// its root and nothing after it, flowEnd never finds content after the
// root. (The other way round, flowEnd may miss the end of an odd root; the
// error then names no line, and the decoder still decides.)
func FuzzFlowEnd(f *testing.F) {
	for _, s := range []string{
		"{a: 1}", "{a: 1} {b: 2}", "[1, [2, {c: \"]\"}]]\n# x\n", "{a: 'it''s'} x", "&x !!map {a: b}\n...\n",
		"{\"a\":1}\n{\"b\":2}\n", "{a: \"\\\"}\"} [1]", "{a: b c 'd'}", "{a: x #c\n}", "{? k: v}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for doc := range documents(data) {
			start := flowRoot(doc.text)
			if start < 0 {
				continue
			}
			if _, err := yaml.YAMLToJSONStrict(doc.text); err != nil {
				continue
			}
			more := moreThanOneValue(doc.text)
			end := flowEnd(doc.text, start)
			found := end >= 0 && nextContent(doc.text, end) >= 0
			if found && !more {
				t.Fatalf("%q: flowEnd ends the root at %d (content after: %v), the decoder finds a second value: %v", doc.text, end, found, more)
			}
		}
	})
}
