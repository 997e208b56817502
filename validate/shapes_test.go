package validate

import (
	"regexp"
	"strings"
	"testing"
)

// platformRE is the shape platformShaped checks, as a regular expression:
// the reference the function is held to.
var platformRE = regexp.MustCompile(`^[a-z0-9_]{1,32}(/[a-z0-9_]{1,32}(/[a-z0-9_.]{1,32})?)?$`)

func TestPlatformShaped(t *testing.T) {
	for _, tc := range []struct {
		platform string
		want     bool
	}{
		{"linux", true},
		{"linux/amd64", true},
		{"linux/arm64/v8", true},
		{"linux/arm/v7.1", true},
		{"linux.x/amd64", false},
		{"linux/amd64/v8/x", false},
		{"linux//v8", false},
		{"linux/", false},
		{"Linux/amd64", false},
		{strings.Repeat("a", 33), false},
		{strings.Repeat("a", 32) + "/" + strings.Repeat("b", 32) + "/" + strings.Repeat("c", 32), true},
		{"", false},
	} {
		if got := platformShaped(tc.platform); got != tc.want {
			t.Errorf("platformShaped(%q) = %v, want %v", tc.platform, got, tc.want)
		}
	}
}

func FuzzPlatformShaped(f *testing.F) {
	for _, s := range []string{"linux/amd64", "linux/arm64/v8", "linux/arm/v7.1", "a/b/c/d", "é/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := platformShaped(p), platformRE.MatchString(p); got != want {
			t.Fatalf("platformShaped(%q) = %v, the regular expression says %v", p, got, want)
		}
	})
}
