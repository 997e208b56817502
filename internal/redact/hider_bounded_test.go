package redact

import (
	"strings"
	"testing"
	"time"
)

// TestHiderTextOfAHugeValueIsFast: a value of 1 MiB ("aaaa...", a .env
// value of a Compose project) made Text build a table in time of its
// length squared (strings.NewReplacer with one value): 64 KiB took
// seconds in the Compose helper, 1 MiB half an hour, and validation's
// scrub runs in the agent. Text is now linear in the values that fit the
// text, and hides the value wherever it is.
func TestHiderTextOfAHugeValueIsFast(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	start := time.Now()
	h := NewHider(huge)
	if got := h.Text(`strconv.Atoi: parsing "x": invalid syntax`); got != `strconv.Atoi: parsing "x": invalid syntax` {
		t.Errorf("Text changed a text without the value: %q", got)
	}
	if got := h.Text("value " + huge + " end"); got != "value "+Hidden+" end" {
		t.Errorf("Text left the value: %.80q", got)
	}
	if got := NewHider(huge, "bbbb").Text(strings.Repeat("bbbb", 1<<12)); strings.Contains(got, "bbbb") {
		t.Errorf("Text left a value: %.80q", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s, want milliseconds (10 s on a loaded machine)", d)
	}
}
