package main

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
)

// unsafeRune reports whether r may not reach a terminal as it is: a
// control character (C0 with newline and tab, DEL, C1, whose ESC and CSI
// start escape sequences), a line or paragraph separator, or a Unicode
// bidi control (which reorders what follows it on the line: a forged
// report could make a row read otherwise), or any other Unicode format
// character (unicode.Cf: zero-width characters, the word joiner, the
// BOM, the soft hyphen, tag characters), which shows nothing and would
// let a forged "h1\u200b" pass for h1.
func unsafeRune(r rune) bool {
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

// terminalText is the one way text from outside (a host's report, etcd,
// a source, an engine) is shown in text output: on one line, every
// unsafe rune (newlines and tabs included) as '?', so that it can neither
// send a terminal commands nor add or move rows. JSON output needs none
// of it: its encoder escapes them.
func terminalText(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return '?'
		}
		return r
	}, s)
}

// terminalArgs returns args with every text among them (a string of any
// string type, an error, a fmt.Stringer) through terminalText: for a format of ours
// printing values from outside.
func terminalArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = terminalText(v)
		case error:
			out[i] = terminalText(v.Error())
		case fmt.Stringer:
			out[i] = terminalText(v.String())
		default:
			out[i] = a
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				// A named string type (a phase, an operation).
				out[i] = terminalText(rv.String())
			}
		}
	}
	return out
}

// fprintText is fmt.Fprintf with its arguments through terminalArgs.
func fprintText(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, terminalArgs(args)...)
}

// terminalSafe wraps w so that text written to it shows control
// characters (escape sequences included) and bidi controls as '?': the
// last guard of a text output, behind terminalText on each value.
// Newlines and tabs pass (the output's own layout).
func terminalSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unsafeRune(r) {
			return r
		}
		return '?'
	}, string(p))
	if _, err := io.WriteString(s.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}
