package runtime

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// traceLog turns BuildKit's progress messages (the build endpoint's
// moby.buildkit.trace, each a StatusResponse of buildkit's control API in
// protobuf) into log lines as `docker build --progress=plain` prints
// them: a line per step when it starts ("#3 [2/3] COPY msg.txt /"), the
// output of its commands, and its error. Only the fields read here are
// decoded (protowire); anything else, or anything malformed, is skipped.
type traceLog struct {
	// steps numbers the steps (vertexes, by digest) in the order they
	// started.
	steps map[string]int
}

func newTraceLog() *traceLog { return &traceLog{steps: map[string]int{}} }

// Field numbers of buildkit's control API (api/services/control).
const (
	statusVertexes = 1 // StatusResponse.vertexes: Vertex
	statusLogs     = 3 // StatusResponse.logs: VertexLog

	vertexDigest  = 1 // Vertex.digest: string
	vertexName    = 3 // Vertex.name: string
	vertexStarted = 5 // Vertex.started: Timestamp
	vertexError   = 7 // Vertex.error: string

	logVertex = 1 // VertexLog.vertex: string (a Vertex's digest)
	logMsg    = 4 // VertexLog.msg: bytes
)

// lines is the text of one StatusResponse, each line ending in "\n".
func (t *traceLog) lines(resp []byte) string {
	var b strings.Builder
	eachBytes(resp, func(num protowire.Number, v []byte) {
		switch num {
		case statusVertexes:
			t.vertex(&b, v)
		case statusLogs:
			var vertex string
			var msg []byte
			eachBytes(v, func(num protowire.Number, f []byte) {
				switch num {
				case logVertex:
					vertex = string(f)
				case logMsg:
					msg = f
				}
			})
			prefix := "#" + strconv.Itoa(t.steps[vertex]) + " "
			for line := range strings.Lines(string(msg)) {
				b.WriteString(prefix + strings.TrimRight(line, "\r\n") + "\n")
			}
		}
	})
	return b.String()
}

// vertex writes the line of a step that started, and its error.
func (t *traceLog) vertex(b *strings.Builder, v []byte) {
	var digest, name, errText string
	started := false
	eachBytes(v, func(num protowire.Number, f []byte) {
		switch num {
		case vertexDigest:
			digest = string(f)
		case vertexName:
			name = string(f)
		case vertexStarted:
			started = true
		case vertexError:
			errText = string(f)
		}
	})
	if digest == "" {
		return
	}
	n, seen := t.steps[digest]
	if !seen && (started || errText != "") {
		n = len(t.steps) + 1
		t.steps[digest] = n
		b.WriteString("#" + strconv.Itoa(n) + " " + name + "\n")
	}
	if errText != "" {
		b.WriteString("#" + strconv.Itoa(n) + " ERROR: " + errText + "\n")
	}
}

// eachBytes calls fn with every length-delimited field of message m
// (strings, bytes, messages), skipping the others; it stops at the first
// malformed field.
func eachBytes(m []byte, fn func(num protowire.Number, v []byte)) {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return
		}
		m = m[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
				return
			}
			m = m[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(m)
		if n < 0 {
			return
		}
		m = m[n:]
		fn(num, v)
	}
}
