package textout

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode"
)

// UnsafeRune reports whether r may not reach a terminal as it is: a
// control character (C0 with newline and tab, DEL, C1, whose ESC and CSI
// start escape sequences), a line or paragraph separator, or a Unicode
// bidi control (which reorders what follows it on the line: a forged
// report could make a row read otherwise), or any other Unicode format
// character (unicode.Cf: zero-width characters, the word joiner, the
// BOM, the soft hyphen, tag characters), which shows nothing and would
// let a forged "h1\u200b" pass for h1.
func UnsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	case r >= 0xad && unicode.Is(unicode.Cf, r):
		return true
	}
	return false
}

// Text is the one way text from outside (a host's report, etcd,
// a source, an engine) is shown in text output: on one line, every
// unsafe rune (newlines and tabs included) as '?', so that it can neither
// send a terminal commands nor add or move rows. JSON output needs none
// of it: its encoder escapes them.
func Text(s string) string {
	if !strings.ContainsFunc(s, UnsafeRune) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if UnsafeRune(r) {
			return '?'
		}
		return r
	}, s)
}

// terminalArgs returns args with every text among them (a string of any
// string type, an error, a fmt.Stringer) through Text: for a format of
// ours printing values from outside.
func terminalArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Text(v)
		case error:
			out[i] = Text(v.Error())
		case fmt.Stringer:
			out[i] = Text(v.String())
		default:
			out[i] = a
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				// A named string type (a phase, an operation).
				out[i] = Text(rv.String())
			}
		}
	}
	return out
}

// Fprintf is fmt.Fprintf with its arguments through Text.
func Fprintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, terminalArgs(args)...)
}

// TerminalSafe wraps w so that text written to it shows control
// characters (escape sequences included) and bidi controls as '?': the
// last guard of a text output, behind Text on each value. Newlines and
// tabs pass (the output's own layout).
func TerminalSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !UnsafeRune(r) {
			return r
		}
		return '?'
	}, string(p))
	if _, err := io.WriteString(s.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}

// IsTerminal reports whether w is a terminal that may be shown colours:
// a character device, and NO_COLOR unset.
func IsTerminal(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
