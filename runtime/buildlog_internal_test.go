package runtime

// The build log hostlet keeps and shows (issue 15).

import (
	"strings"
	"testing"
	"unicode"
)

// TestBuildLogDropsControlCharacters: a build's RUN step prints whatever
// it likes, and the log's last lines go into the BuildFailed message
// (status, GET /pods/{id}, events, `hostlet status`'s table). Kept with
// their control characters, an OSC 52 sequence would write the operator's
// clipboard, others retitle or clear the terminal, and newlines print
// table rows of pods that do not exist.
func TestBuildLogDropsControlCharacters(t *testing.T) {
	stream := `{"stream":"Step 2/2 : RUN [\"/app\"]\n"}` +
		`{"stream":"\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUvcnwgc2g=\u0007\u001b[2J\u001b[1;1H\n"}` +
		`{"stream":"db   postgres  Running  running  0  abc1234  postgres:16  -\n"}` +
		`{"error":"The command '/app' returned a non-zero code: 1\u001b[8m hidden"}`
	lines, err := readBuildStream(strings.NewReader(stream))
	text := strings.Join(lines, "\n") + "\n" + err.Error()
	for _, r := range text {
		if r != '\n' && unicode.IsControl(r) {
			t.Errorf("the build log kept control character %q in the text shown to operators:\n%q", r, text)
			break
		}
	}
}

// The log's last lines are the ones kept when the whole does not fit an
// event's message: what failed is said last.
func TestBuildLogTailKeepsTheLastLines(t *testing.T) {
	var log []string
	for i := range BuildLogLines {
		log = append(log, strings.Repeat("x", BuildLineLength-10)+" line "+string(rune('a'+i)))
	}
	tail := logTail(log)
	if len(tail) > MaxLogTail+64 || !strings.HasSuffix(tail, log[len(log)-1]) {
		t.Errorf("tail of %d bytes ending %q, want at most %d bytes ending with the last line", len(tail), tail[max(0, len(tail)-20):], MaxLogTail)
	}
}
