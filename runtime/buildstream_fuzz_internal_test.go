package runtime

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hostlet/hostlet/internal/testkit"
)

// fuzzSecret is a build arg's value the fuzzed streams may print.
const fuzzSecret = "hunter2-build-secret"

// traceMessage is a BuildKit progress message of the build's stream: a
// StatusResponse with a vertex (digest, name, started or error) and a log
// of it.
func traceMessage(digest, name, errText, log string) string {
	var vertex []byte
	vertex = protowire.AppendTag(vertex, vertexDigest, protowire.BytesType)
	vertex = protowire.AppendString(vertex, digest)
	vertex = protowire.AppendTag(vertex, vertexName, protowire.BytesType)
	vertex = protowire.AppendString(vertex, name)
	vertex = protowire.AppendTag(vertex, vertexStarted, protowire.BytesType)
	vertex = protowire.AppendBytes(vertex, nil)
	if errText != "" {
		vertex = protowire.AppendTag(vertex, vertexError, protowire.BytesType)
		vertex = protowire.AppendString(vertex, errText)
	}
	var logMessage []byte
	logMessage = protowire.AppendTag(logMessage, logVertex, protowire.BytesType)
	logMessage = protowire.AppendString(logMessage, digest)
	logMessage = protowire.AppendTag(logMessage, logMsg, protowire.BytesType)
	logMessage = protowire.AppendString(logMessage, log)
	var resp []byte
	resp = protowire.AppendTag(resp, statusVertexes, protowire.BytesType)
	resp = protowire.AppendBytes(resp, vertex)
	resp = protowire.AppendTag(resp, statusLogs, protowire.BytesType)
	resp = protowire.AppendBytes(resp, logMessage)
	aux, _ := json.Marshal(base64.StdEncoding.EncodeToString(resp))
	return `{"id":"moby.buildkit.trace","aux":` + string(aux) + "}"
}

// FuzzReadBuildStream feeds arbitrary build streams (the classic
// builder's log lines, BuildKit's protobuf progress, errors: what a
// Dockerfile's RUN steps print reaches them) to readBuildStream, seeded
// with the hostile logs of the build tests. Whatever the stream: no
// panic; at most BuildLogLines lines, each within BuildLineLength (and
// "..."); no control character (terminal escapes, newlines) in a line or
// the error; a build arg's value never shown.
func FuzzReadBuildStream(f *testing.F) {
	for _, s := range []string{
		`{"stream":"Step 1/2 : FROM scratch\n"}{"stream":"Step 2/2 : RUN [\"/app\"]\n"}`,
		`{"stream":"Step 2/2 : RUN [\"/app\"]\n"}` +
			`{"stream":"\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUvcnwgc2g=\u0007\u001b[2J\u001b[1;1H\n"}` +
			`{"stream":"db   postgres  Running  running  0  abc1234  postgres:16  -\n"}` +
			`{"error":"The command '/app' returned a non-zero code: 1\u001b[8m hidden"}`,
		`{"stream":"hunter2-"}{"stream":"build-secret\n"}{"errorDetail":{"message":"failed: hunter2-build-secret"}}`,
		`{"stream":"` + strings.Repeat("a", 2000) + `"}{"stream":"\r\n\r\n"}`,
		traceMessage("sha256:1", "[1/2] FROM scratch", "", "") + traceMessage("sha256:2", "[2/2] RUN /app", "exit code: 1", "hunter2-build-secret\n\x1b[2Jx\r\n"),
		`{"id":"moby.buildkit.trace","aux":"AAAA"}{"id":"moby.buildkit.trace","aux":"CgIKAA=="}`,
		`{"stream":`, `[]`, `{"aux":{}}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	// The hostile build logs of the build tests.
	for _, s := range testkit.Literals(f, func(s string) bool { return strings.Contains(s, `{"`) }, "buildlog_internal_test.go", "build_isolation_test.go", "build_test.go") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := readBuildStream(strings.NewReader(string(data)), fuzzSecret)
		if len(lines) > BuildLogLines {
			t.Fatalf("%d lines kept, want at most %d", len(lines), BuildLogLines)
		}
		texts := lines
		if err != nil {
			texts = append(texts, err.Error())
		}
		for _, s := range texts {
			if len(s) > BuildLineLength+len("...") && !strings.HasPrefix(s, "read the build's stream: ") {
				t.Fatalf("a line of %d bytes, want at most %d: %.100q", len(s), BuildLineLength, s)
			}
			if strings.Contains(s, fuzzSecret) {
				t.Fatalf("the build arg's value is shown: %q", s)
			}
			if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
				t.Fatalf("control character %q shown: %q", s[i], s)
			}
		}
	})
}
