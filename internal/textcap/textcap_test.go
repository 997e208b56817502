package textcap

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "short", in: "abc", n: 40, want: "abc"},
		{name: "exactly n", in: strings.Repeat("a", 40), n: 40, want: strings.Repeat("a", 40)},
		{name: "one over", in: strings.Repeat("a", 41), n: 40, want: strings.Repeat("a", 21) + "... (20 more bytes)"},
		{name: "3 MB", in: strings.Repeat("a", 3<<20), n: 64, want: strings.Repeat("a", 40) + "... (3145688 more bytes)"},
		{name: "cut at a character boundary", in: strings.Repeat("é", 30), n: 40, want: strings.Repeat("é", 10) + "... (40 more bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.in, tt.n)
			if got != tt.want {
				t.Errorf("Truncate = %q, want %q", got, tt.want)
			}
			if len(got) > tt.n || !utf8.ValidString(got) {
				t.Errorf("Truncate = %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), tt.n)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "short line", in: "version: v1", want: "version: v1"},
		{name: "two lines", in: "secret: 1\nsecret: 2", want: "secret: 1... (10 more bytes)"},
		{name: "CR line", in: "a\r\nb", want: "a... (3 more bytes)"},
		{name: "long line", in: strings.Repeat("x", 200), want: strings.Repeat("x", 60) + "... (140 more bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Excerpt(tt.in)
			if got != tt.want {
				t.Errorf("Excerpt = %q, want %q", got, tt.want)
			}
			if len(got) > ExcerptBytes || strings.ContainsAny(got, "\r\n") {
				t.Errorf("Excerpt = %d bytes or more than one line", len(got))
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "short", in: "web", want: `"web"`},
		{name: "newline escaped", in: "a\nb", want: `"a\nb"`},
		{name: "long", in: strings.Repeat("A", 3<<20), want: `"` + strings.Repeat("A", 54) + `"... (3145674 more bytes)`},
		{name: "control characters count as escaped", in: strings.Repeat("\x01", 100), want: `"` + strings.Repeat(`\x01`, 14) + `"... (86 more bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Quote(tt.in, ExcerptBytes)
			if got != tt.want {
				t.Errorf("Quote = %s, want %s", got, tt.want)
			}
			if len(got) > ExcerptBytes || strings.ContainsAny(got, "\r\n") {
				t.Errorf("Quote = %d bytes or more than one line", len(got))
			}
			if q, _, ok := strings.Cut(got, "..."); ok {
				if _, err := strconv.Unquote(q); err != nil {
					t.Errorf("quoted part %s does not unquote: %v", q, err)
				}
			}
		})
	}
}

type bigStringer struct{}

func (bigStringer) String() string { return strings.Repeat("s", 10000) }

type nilError struct{ msg *string }

func (e *nilError) Error() string { return *e.msg }

func TestLogHandlerCapsValues(t *testing.T) {
	const n = 100
	huge := strings.Repeat("z", 3<<20)
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want []string // substrings of the line
	}{
		{name: "string", log: func(l *slog.Logger) { l.Warn("x", "error", huge) }},
		{name: "error", log: func(l *slog.Logger) { l.Warn("x", "error", errors.New(huge)) }},
		{name: "stringer", log: func(l *slog.Logger) { l.Warn("x", "v", bigStringer{}) }},
		{name: "other value", log: func(l *slog.Logger) { l.Warn("x", "v", []string{huge}) }},
		{name: "message", log: func(l *slog.Logger) { l.Warn(huge) }},
		{name: "group", log: func(l *slog.Logger) { l.Warn("x", slog.Group("g", "error", huge)) }},
		{name: "With", log: func(l *slog.Logger) { l.With("error", huge).Warn("x") }},
		{name: "WithGroup", log: func(l *slog.Logger) { l.WithGroup("g").Warn("x", "error", huge) }},
		{name: "short values unchanged", log: func(l *slog.Logger) { l.Warn("x", "n", 3, "error", errors.New("boom")) }, want: []string{"n=3", "error=boom"}},
		{name: "nil pointer error", log: func(l *slog.Logger) { l.Warn("x", "error", &nilError{}) }, want: []string{"PANIC"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil), n)))
			line := buf.String()
			if len(line) > 4*n {
				t.Errorf("log line is %d bytes, want at most %d: %.200s", len(line), 4*n, line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("log line %q does not contain %q", line, w)
				}
			}
		})
	}
}
