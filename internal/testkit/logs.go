package testkit

import (
	"bytes"
	"io"
	"log/slog"
	gosync "sync"
	"testing"
)

// LogBuffer is a log's output, read while the code under test writes it.
type LogBuffer struct {
	mu gosync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a debug logger that writes to the test's output and to a
// buffer the test can search (for secrets that must not be there).
func Logger(t testing.TB) (*slog.Logger, *LogBuffer) {
	buf := &LogBuffer{}
	w := io.MultiWriter(t.Output(), buf)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}
