package main

import (
	"io"
	"strings"
)

// terminalSafe wraps w so that text written to it shows control
// characters (escape sequences included) as '?': what hosts report
// through etcd reaches an operator's terminal as text, never as commands
// to it. Newlines and tabs pass.
func terminalSafe(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, string(p))
	if _, err := io.WriteString(s.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}
