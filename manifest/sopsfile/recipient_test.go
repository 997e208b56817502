package sopsfile

import (
	"regexp"
	"strings"
	"testing"
)

// recipientRE is the shape recipientShaped checks, as a regular
// expression: the reference the function is held to.
var recipientRE = regexp.MustCompile(`^(age1[0-9a-z]{20,200}|(ssh-ed25519|ssh-rsa) [A-Za-z0-9+/=]{20,1000})$`)

func TestRecipientShapedKeepsOnlyKeys(t *testing.T) {
	for _, tc := range []struct {
		recipient string
		want      bool
	}{
		{"age1" + strings.Repeat("q", 58), true},
		{"age1" + strings.Repeat("q", 19), false},
		{"age1" + strings.Repeat("q", 200), true},
		{"age1" + strings.Repeat("q", 201), false},
		{"age1" + strings.Repeat("Q", 58), false},
		{"ssh-ed25519 " + strings.Repeat("A", 68), true},
		{"ssh-rsa " + strings.Repeat("A+/=", 250), true},
		{"ssh-rsa " + strings.Repeat("A", 1001), false},
		{"ssh-ed25519 AAAA user@host", false},
		{"ssh-dss " + strings.Repeat("A", 68), false},
		{"password=hunter2", false},
		{"", false},
	} {
		if got := recipientShaped(tc.recipient); got != tc.want {
			t.Errorf("recipientShaped(%.30q) = %v, want %v", tc.recipient, got, tc.want)
		}
	}
}

func FuzzRecipientShaped(f *testing.F) {
	for _, s := range []string{"age1" + strings.Repeat("x", 20), "ssh-rsa " + strings.Repeat("A", 20), "age1é" + strings.Repeat("x", 20), "ssh-ed25519  AAAAAAAAAAAAAAAAAAAAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, r string) {
		if got, want := recipientShaped(r), recipientRE.MatchString(r); got != want {
			t.Fatalf("recipientShaped(%q) = %v, the regular expression says %v", r, got, want)
		}
	})
}
