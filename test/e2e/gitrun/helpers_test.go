package gitrun_test

import (
	"bytes"
	"io"
	"log/slog"
	gosync "sync"
	"testing"
)

// The credentials of the smart-HTTP server the tests serve the repository
// from.
const (
	httpUser     = "ops"
	httpPassword = "hunter2-Zq9vX7"
)

// testLog returns a logger that writes to the test's output and, too, to a
// buffer the test can search (for secrets that must not be there).
func testLog(t testing.TB) (*slog.Logger, *lockedBuffer) {
	buf := &lockedBuffer{}
	w := io.MultiWriter(t.Output(), buf)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// lockedBuffer is a log's output, read while the agent writes it.
type lockedBuffer struct {
	mu gosync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
