package textout

import (
	"strings"
	"testing"
	"unicode"
)

func TestTerminalSafe(t *testing.T) {
	var b strings.Builder
	n, err := TerminalSafe(&b).Write([]byte("host \x1b]0;pwned\a\x1b[2Jweb\u009b1m\tok\n"))
	if err != nil || n != len("host \x1b]0;pwned\a\x1b[2Jweb\u009b1m\tok\n") {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if got, want := b.String(), "host ?]0;pwned??[2Jweb?1m\tok\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTerminalText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcode, 日本", "plain text, ünïcode, 日本"},
		{"a\nb\r\nc\td", "a?b??c?d"},
		{"\x1b[2J\x1b]0;t\a\x00\x7f", "?[2J?]0;t???"},
		{"c1 \u009b31m \u0085", "c1 ?31m ?"},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f\u061c", "bidi ?evil? ?x? ??"},
		{"sep \u2028\u2029", "sep ??"},
		// Invisible: a forged host "h1\u200b" must not pass for h1.
		{"h1\u200b web\u200c\u200d \u2060\u2061\u2064 \ufeffbom", "h1? web?? ??? ?bom"},
		{"soft\u00adhyphen mongol\u180e", "soft?hyphen mongol?"},
		{"tag\U000e0001\U000e0041\U000e007f", "tag???"},
		{"other format \u0600\u06dd\u070f\U000110bd\U0001bca0", "other format ?????"},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// forged is text a forged report holds: escape sequences, C1 controls,
// bidi overrides, and newlines that would draw rows of their own (as
// cmd/hostlet's tests forge it).
const forged = "x\x1b[2J\x1b]0;pwned\a\u009b31m\u202eevil\r\nFAKE-ROW  yes  0000  1/1 Running\n\tFAKE-TAB"

// FuzzTerminalText: whatever a report holds, what is shown of it has no
// control, separator or bidi character, one rune for each of the input's.
func FuzzTerminalText(f *testing.F) {
	f.Add(forged)
	f.Add("plain")
	f.Add("\u202e\u2066\u0085\x7f")
	f.Add("h1\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
	f.Add("tag\U000e0001\U000e0041\U000e007f")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if strings.ContainsFunc(out, UnsafeRune) || strings.ContainsFunc(out, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
			t.Fatalf("Text(%q) = %q", s, out)
		}
		if got, want := len([]rune(out)), len([]rune(s)); got != want {
			t.Fatalf("Text(%q) = %q: %d runes, want %d", s, out, got, want)
		}
	})
}
