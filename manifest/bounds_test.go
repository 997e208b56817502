package manifest_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
)

// maxErrorBytes is the most one *manifest.Error may render to: its origin,
// pod id excerpt, field path and detail, each at its bound, and the
// separators between them.
const maxErrorBytes = textcap.OriginBytes + len(": pod ") + textcap.IDBytes + len(": ") + textcap.FieldBytes + len(": ") + textcap.DetailBytes

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := range len(s) {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// allErrors returns every *manifest.Error of a Decode: the returned ones
// and those kept in the manifests.
func allErrors(err error, ms []manifest.Sourced) []*manifest.Error {
	var out []*manifest.Error
	var merr *multierror.Error
	var me *manifest.Error
	switch {
	case errors.As(err, &merr):
		for _, e := range merr.Errors {
			if errors.As(e, &me) {
				out = append(out, me)
			}
		}
	case errors.As(err, &me):
		out = append(out, me)
	}
	for _, m := range ms {
		out = append(out, m.Errors...)
	}
	return out
}

// TestDecodeErrorsBounded (issue 12, finding 6): a 3 MB file made an error
// of 24 MB. However large the input, every error quotes at most an excerpt
// of ExcerptBytes of it, renders (as text and as JSON) to a bounded size,
// and a file reports a bounded number of errors.
func TestDecodeErrorsBounded(t *testing.T) {
	const size = 3 << 20
	big := strings.Repeat("A", size)
	items := strings.Repeat(`{"A":1},`, size/8)
	tests := []struct {
		name string
		data string
	}{
		{name: "huge JSON key", data: `{"version":"v1beta1","id":"a","` + big + `":1}`},
		{name: "huge plain YAML key in a flow mapping", data: "{version: v1beta1, id: a, " + big + ": 1}\n"},
		{name: "huge label key of control characters", data: `{"version":"v1beta1","id":"a","labels":{"` + strings.Repeat(`\u0001`, size/6) + `":1}}`},
		{name: "huge number", data: `{"version":"v1beta1","id":"a","containers":[{"name":"a","image":"b","ports":[{"containerPort":1` + strings.Repeat("1", size) + `}]}]}`},
		{name: "huge id with an unknown field", data: "version: v1beta1\nid: " + big + "\nbogus: 1\n"},
		{name: "huge id with a wrong type", data: "version: v1beta1\nid: " + big + "\ncontainers: 1\n"},
		{name: "huge duplicate key", data: "{" + big + ": 1, " + big + ": 2}\n"},
		{name: "a list of 400000 bad items", data: "[" + strings.TrimSuffix(items, ",") + "]"},
		{name: "one huge garbage line", data: big + ": : :\n"},
		{name: "many garbage documents", data: strings.Repeat("---\n: : :\n", size/10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.data), origin)
			errs := allErrors(err, ms)
			if len(errs) == 0 {
				t.Fatalf("no error for %d bytes of bad input", len(tt.data))
			}
			if len(errs) > manifest.MaxFileErrors+1 {
				t.Errorf("%d errors for one file, want at most %d and one saying how many more", len(errs), manifest.MaxFileErrors)
			}
			for _, e := range errs {
				text := e.Error()
				if len(text) > maxErrorBytes {
					t.Errorf("error is %d bytes, want at most %d: %.200s", len(text), maxErrorBytes, text)
				}
				if n := longestRun(text, 'A'); n > textcap.IDBytes {
					t.Errorf("error quotes %d bytes of the input, want at most %d: %.200s", n, textcap.IDBytes, text)
				}
				js, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				if len(js) > 2*maxErrorBytes {
					t.Errorf("error as JSON is %d bytes, want at most %d: %.200s", len(js), 2*maxErrorBytes, js)
				}
			}
		})
	}
}

// FuzzDecodeErrorsBounded: whatever the input, Decode reports at most
// MaxFileErrors errors and one counting the rest, each within its bound.
func FuzzDecodeErrorsBounded(f *testing.F) {
	addSeeds(f, "testdata", filepath.Join("..", "validate", "testdata"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := manifest.Decode(data, origin)
		errs := allErrors(err, ms)
		if err == nil && len(ms) == 0 {
			t.Fatal("no manifest and no error")
		}
		if n := len(errs) - len(strictOf(ms)); n > manifest.MaxFileErrors+1 {
			t.Fatalf("%d errors for one file", n)
		}
		for _, e := range errs {
			if text := e.Error(); len(text) > maxErrorBytes || strings.Contains(text, "\n") {
				t.Fatalf("error of %d bytes (or on several lines): %.300q", len(text), text)
			}
		}
	})
}

func strictOf(ms []manifest.Sourced) []*manifest.Error {
	var out []*manifest.Error
	for _, m := range ms {
		out = append(out, m.Errors...)
	}
	return out
}
