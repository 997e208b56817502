package redact

import (
	"strings"
	"testing"
	"unicode"
)

func TestHider(t *testing.T) {
	h := NewHider("hunter2pw", "ab", "/dev/sdb:/dev/xvdb:rwm").WithParts("SYS_PTRACE")
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"hunter2pw", true},                  // the value
		{"HUNTER2PW", true},                  // upper-cased by a parser
		{"ab", true},                         // a short value, quoted whole
		{"/dev/sdb", true},                   // a part a parser split off
		{"sys_ptrace", true},                 // a part, any case
		{"x-hunter2pw-y", true},              // a message holding it
		{"about", false},                     // holds "ab", too short to look for
		{"is not a Linux capability", false}, // nothing of them
		{"", false},
	} {
		if got := h.Covers(tc.v); got != tc.want {
			t.Errorf("Covers(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if got, want := h.Text(`"hunter2pw" about ab SYS_PTRACE hunter2pw`), `"<value hidden>" about ab SYS_PTRACE <value hidden>`; got != want {
		t.Errorf("Text = %q, want %q (short values and parts are not searched for)", got, want)
	}
	if got := NewHider("value", "hidden").Text("<value hidden> value"); got != "<value hidden> <value hidden>" {
		t.Errorf("Text took a placeholder apart: %q", got)
	}
	for n, want := range map[int64]bool{8080: true, 80: true, 8: false, 443: false} {
		if got := NewHider("8080:80").CoversNumber(n); got != want {
			t.Errorf("CoversNumber(%d) = %v, want %v", n, got, want)
		}
	}
	if !(Hider{}).Empty() || (Hider{}).Covers("x") || (Hider{}).Text("x") != "x" {
		t.Error("the zero Hider hides something")
	}
}

// FuzzHiderText: whatever the values and the text, no value of letters
// and digits at least minScrubLen long is left in the text Text returns
// (outside the placeholders it put there), and Covers says a value and
// every part of it may show one.
func FuzzHiderText(f *testing.F) {
	f.Add("hunter2pw", "short", `error: "hunter2pw" is not valid; HUNTER2PW`)
	f.Add("value", "hidden", "<value hidden> value hidden")
	f.Add("aaaa", "aaaaa", "aaaaaaaaaaaaa")
	f.Add("8080:80", "ab", "host port 8080/TCP ab")
	f.Fuzz(func(t *testing.T, v1, v2, text string) {
		h := NewHider(v1, v2)
		out := h.Text(text)
		for _, v := range []string{v1, v2} {
			if len(v) < minScrubLen || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
				continue
			}
			for _, part := range strings.Split(out, Hidden) {
				if strings.Contains(part, v) {
					t.Fatalf("Text(%q) = %q still holds %q", text, out, v)
				}
			}
			if r := []rune(v); !h.Covers(v) || !h.Covers(string(r[:len(r)/2+1])) {
				t.Fatalf("Covers misses %q or its first half", v)
			}
		}
	})
}
