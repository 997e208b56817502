package textcap

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The bounds. Every one counts bytes, and a cut text, its note of what was
// left out included, stays within its bound.
const (
	// ExcerptBytes bounds one excerpt of input quoted in an error (a key, a
	// value, a number, a pod id): at most this many bytes of one line.
	ExcerptBytes = 80
	// IDBytes bounds a pod or container id quoted in an error: a valid id
	// (at most 253 bytes) is shown whole, quoted.
	IDBytes = 260
	// FieldBytes bounds the field path of an error
	// (containers[0].ports[1].hostPort).
	FieldBytes = 256
	// OriginBytes bounds the "source:file" an error starts with.
	OriginBytes = 512
	// DetailBytes bounds the detail of one error, the text after its field
	// path. With the bounds above, one error's text stays under 1.5 KiB.
	DetailBytes = 512
	// ErrorTextBytes bounds the whole error text of a source, as the
	// status document and source-error events show it: its errors joined,
	// the ones that do not fit counted as "... and N more errors".
	ErrorTextBytes = 4 << 10
	// LogValueBytes bounds a log line's message and each of its attribute
	// values (see NewLogHandler).
	LogValueBytes = 4 << 10
)

// minBound is the smallest bound that leaves room for a cut note.
const minBound = 32

// Truncate returns s when it holds at most n bytes, else its longest
// prefix (cut at a character boundary) followed by "... (N more bytes)",
// n bytes at most in all. n is at least 32.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, n-len(more(len(s))))
}

// Excerpt returns s when it is one line of at most ExcerptBytes, else the
// start of its first line, stating how many bytes of s were left out,
// ExcerptBytes at most in all.
func Excerpt(s string) string {
	line := s
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		line = s[:i]
	}
	if len(line) == len(s) && len(s) <= ExcerptBytes {
		return s
	}
	return cut(s, min(len(line), ExcerptBytes-len(more(len(s)))))
}

// Quote returns s quoted as strconv.Quote does when that fits in n bytes
// (ExcerptBytes for an excerpt of input, IDBytes for an id); else the
// quoted start of s followed by "... (N more bytes)", n bytes at most in
// all. The result is always one line. n is at least 32.
func Quote(s string, n int) string {
	q := strconv.Quote(s)
	if len(q) <= n {
		return q
	}
	budget := n - len(more(len(s))) - 1 // the closing quote
	b := make([]byte, 0, n)
	b = append(b, '"')
	i := 0
	for i < len(s) {
		_, w := utf8.DecodeRuneInString(s[i:])
		esc := strconv.Quote(s[i : i+w])
		esc = esc[1 : len(esc)-1]
		if len(b)+len(esc) > budget {
			break
		}
		b = append(b, esc...)
		i += w
	}
	b = append(b, '"')
	return string(b) + more(len(s)-i)
}

// cut keeps at most keep bytes of s, backing off to a character boundary,
// and notes how many bytes were left out.
func cut(s string, keep int) string {
	keep = max(keep, 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + more(len(s)-keep)
}

// more is the note that n bytes were left out.
func more(n int) string {
	return "... (" + strconv.Itoa(n) + " more bytes)"
}
