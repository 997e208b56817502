package sync

import (
	"strings"
	"testing"
)

// FuzzDecodeRestarts: any restarts file (a damaged one, an older
// hostlet's) decodes to counts that are never negative, each of a slot
// ("pod/container"), or fails; it never panics.
func FuzzDecodeRestarts(f *testing.F) {
	for _, s := range []string{
		`{"slots":{"web/app":{"count":3,"containerID":"abc","engineCount":1}}}`,
		`{"slots":{"web/app":{"count":-1}}}`, `{"slots":{"noslash":{}}}`, `{"slots":{"a/b":null}}`,
		`{"slots":null}`, `{}`, `[]`, `{"slots":{"a/b":{"count":1e400}}}`, "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var rs restartStore
		if err := decodeRestarts(b, &rs); err != nil {
			return
		}
		for k, sr := range rs.Slots {
			if sr == nil || sr.Count < 0 || sr.EngineCount < 0 || !strings.Contains(k, "/") {
				t.Fatalf("slot %q decoded as %+v", k, sr)
			}
		}
	})
}
